package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// capture runs f with stdout and stderr redirected and returns them.
func capture(t *testing.T, f func() int) (code int, stdout, stderr string) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	code = f()
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	o, _ := io.ReadAll(outR)
	e, _ := io.ReadAll(errR)
	return code, string(o), string(e)
}

func TestHelpListsEveryVariable(t *testing.T) {
	code, out, _ := capture(t, func() int { return run([]string{"--help"}) })
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, v := range []string{"BRIDGE_RESOURCES", "BRIDGE_RESYNC_PERIOD", "NATS_URL", "NATS_CREDS", "BRIDGE_STREAM_DUPLICATE_WINDOW", "BRIDGE_HTTP_ADDR"} {
		if !strings.Contains(out, v) {
			t.Errorf("--help does not mention %s", v)
		}
	}
}

func TestVersionAndUnknownArgument(t *testing.T) {
	if code, out, _ := capture(t, func() int { return run([]string{"--version"}) }); code != 0 || strings.TrimSpace(out) != version {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if code, _, errOut := capture(t, func() int { return run([]string{"--frobnicate"}) }); code != 2 || !strings.Contains(errOut, "unknown argument") {
		t.Errorf("unknown argument: exit %d, %q", code, errOut)
	}
}

// Invalid configuration: one line per problem on stderr, exit 2, no trace.
func TestInvalidEnvironmentExitsTwo(t *testing.T) {
	t.Setenv("BRIDGE_RESOURCES", "")
	t.Setenv("BRIDGE_RESYNC_PERIOD", "soon")
	t.Setenv("NATS_URL", "http://example.com")
	code, _, errOut := capture(t, func() int { return run(nil) })
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 3 {
		t.Errorf("want 3 lines (resync period, NATS_URL, resources), got %d:\n%s", len(lines), errOut)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "bridge: ") || strings.Contains(l, "goroutine") {
			t.Errorf("unexpected line %q", l)
		}
	}
}

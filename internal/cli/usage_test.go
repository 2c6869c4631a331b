package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubebridge/kubebridge/internal/cli"
)

// runOffline runs the CLI with no environment: what it tests fails or
// ends before a connection is tried.
func runOffline(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), args, &stdout, &stderr, cli.WithEnv(func(string) string { return "" }), cli.WithVersion("v9.9.9"))
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// A flag the command does not take is one error line naming it, and where
// to look, as kubectl says it; nothing runs.
func TestUnknownFlagIsOneError(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"get", "cm", "--bogus"}, "Error: unknown flag: --bogus\nSee 'kubebridge get --help' for usage.\n"},
		{[]string{"get", "cm", "-n", "web", "--bogus=1"}, "Error: unknown flag: --bogus\nSee 'kubebridge get --help' for usage.\n"},
		{[]string{"watch", "cm", "-x"}, "Error: unknown shorthand flag: 'x' in -x\nSee 'kubebridge watch --help' for usage.\n"},
		// Go's flag package took one dash for a long name; kubectl does not.
		{[]string{"watch", "cm", "-all"}, "Error: unknown shorthand flag: 'a' in -all\nSee 'kubebridge watch --help' for usage.\n"},
		{[]string{"get", "cm", "-n"}, "Error: flag needs an argument: 'n' in -n\nSee 'kubebridge get --help' for usage.\n"},
		{[]string{"verify", "--max-findings", "many"}, "Error: invalid argument \"many\" for \"--max-findings\" flag: strconv.ParseInt: parsing \"many\": invalid syntax\nSee 'kubebridge verify --help' for usage.\n"},
	} {
		res := runOffline(c.args...)
		if res.code != cli.ExitError || res.stdout != "" || res.stderr != c.stderr {
			t.Errorf("%q: %s\nwant exit 2 and stderr %q", c.args, res, c.stderr)
		}
	}
}

func TestFlagBeforeCommand(t *testing.T) {
	res := runOffline("-n", "web", "get", "cm")
	first, _, _ := strings.Cut(res.stderr, "\n")
	if res.code != cli.ExitError || first != "Error: flag -n before the command: only connection flags may come first" || !strings.Contains(res.stderr, "Usage: kubebridge") {
		t.Errorf("-n before the command: %s", res)
	}
	if res := runOffline("--", "get"); res.code != cli.ExitError || !strings.HasPrefix(res.stderr, "Error: no command before --\n") {
		t.Errorf("-- before the command: %s", res)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help", "get"}, {"get", "--help"}, {"get", "-h"}, {"--context", "x", "get", "cm", "-h"}} {
		if res := runOffline(args...); res.code != cli.ExitOK || !strings.HasPrefix(res.stdout, "Usage: kubebridge get <resource>") || res.stderr != "" {
			t.Errorf("%q: %s", args, res)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		if res := runOffline(args...); res.code != cli.ExitOK || !strings.Contains(res.stdout, "Connection flags") || res.stderr != "" {
			t.Errorf("%q: %s", args, res)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-s", "nats://h", "version"}} {
		if res := runOffline(args...); res.code != cli.ExitOK || res.stdout != "v9.9.9\n" {
			t.Errorf("%q: %s", args, res)
		}
	}
}

package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		args    []string
		command string
		rest    []string
		err     string
	}{
		{args: []string{"get", "cm", "-n", "x"}, command: "get", rest: []string{"cm", "-n", "x"}},
		{args: []string{"--context", "prod", "-s=nats://a", "get", "cm"}, command: "get", rest: []string{"--context", "prod", "-s=nats://a", "cm"}},
		{args: []string{"-s", "get", "watch"}, command: "watch", rest: []string{"-s", "get"}},
		{args: []string{"--help"}, command: "--help", rest: []string{}},
		{args: []string{"-n", "web", "get"}, err: "only connection flags"},
		{args: nil, command: ""},
	} {
		cmd, rest, err := splitCommand(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || cmd != c.command || !slices.Equal(rest, c.rest) && len(rest)+len(c.rest) > 0 {
			t.Errorf("%q: %q %q %v, want %q %q", c.args, cmd, rest, err, c.command, c.rest)
		}
	}
}

// testEnv is an env whose output the test reads.
func testEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &env{stdout: &stdout, stderr: &stderr}, &stdout, &stderr
}

func TestParseInterspersed(t *testing.T) {
	e, _, _ := testEnv()
	fs := newCommandFlags(e, "get", "", pflag.NewFlagSet("", pflag.ContinueOnError))
	var ns, out string
	var all bool
	fs.StringVarP(&ns, "namespace", "n", "", "")
	fs.StringVarP(&out, "output", "o", "", "")
	fs.BoolVarP(&all, "all-namespaces", "A", false, "")
	pos, code := parseArgs(e, fs, []string{"configmaps", "-nweb", "a", "-oyaml", "-A", "b", "--", "-c"})
	if code != -1 || !slices.Equal(pos, []string{"configmaps", "a", "b", "-c"}) || ns != "web" || out != "yaml" || !all {
		t.Errorf("got %q %v ns=%q o=%q A=%v", pos, code, ns, out, all)
	}
	if _, code := parseArgs(e, fs, []string{"-x"}); code != ExitError {
		t.Error("an unknown flag passed")
	}
}

// parseCommand parses args as command name does, with its own flags and
// the connection flags, and returns the positional arguments.
func parseCommand(t *testing.T, name string, register func(*pflag.FlagSet), args ...string) ([]string, *streamCommand) {
	t.Helper()
	e, _, stderr := testEnv()
	cmd := newStreamCommand(e, name, "", ExitFindings)
	register(cmd.fs)
	pos, code := cmd.parse(args)
	if code != -1 {
		t.Fatalf("%s %q: exit %d: %s", name, args, code, stderr)
	}
	return pos, cmd
}

func TestCommandFlagsAfterArguments(t *testing.T) {
	var g getFlags
	pos, cmd := parseCommand(t, "get", g.register, "configmaps", "a", "--namespace", "web", "b", "--selector=app=x", "--show-labels", "--server", "nats://h:4222", "--context", "prod")
	if !slices.Equal(pos, []string{"configmaps", "a", "b"}) || g.namespace != "web" || g.selector != "app=x" || !g.showLabels {
		t.Errorf("get: %q %+v", pos, g)
	}
	if cmd.conn.server != "nats://h:4222" || cmd.conn.context != "prod" {
		t.Errorf("get: connection flags after the arguments: %+v", cmd.conn)
	}

	var w watchFlags
	pos, _ = parseCommand(t, "watch", w.register, "cm,deploy", "--all", "w", "--diff", "--", "--snapshots")
	if !slices.Equal(pos, []string{"cm,deploy", "w", "--snapshots"}) || !w.fromStart || !w.diff || w.snapshots {
		t.Errorf("watch: %q %+v", pos, w)
	}

	var v verifyFlags
	pos, _ = parseCommand(t, "verify", v.register, "configmaps", "--against-cluster", "secrets", "--kube-context", "prod", "--kubeconfig", "/k", "--max-findings", "3")
	if !slices.Equal(pos, []string{"configmaps", "secrets"}) || !v.against || v.kubeContext != "prod" || v.kubeconfig != "/k" || v.maxFindings != 3 {
		t.Errorf("verify: %q %+v", pos, v)
	}
}

func TestCommandShortFlags(t *testing.T) {
	var g getFlags
	pos, cmd := parseCommand(t, "get", g.register, "cm", "-n", "web", "-A", "-o", "yaml", "-l", "app", "-s", "nats://h:4222", "-v", "2")
	if !slices.Equal(pos, []string{"cm"}) || g.namespace != "web" || !g.all || g.output != "yaml" || g.selector != "app" {
		t.Errorf("get: %q %+v", pos, g)
	}
	if cmd.conn.server != "nats://h:4222" || cmd.conn.verbosity != 2 {
		t.Errorf("get: -s and -v: %+v", cmd.conn)
	}
	// A short flag's value attached, and short flags together.
	g = getFlags{}
	_, _ = parseCommand(t, "get", g.register, "cm", "-nweb", "-oname")
	if g.namespace != "web" || g.output != "name" {
		t.Errorf("get -nweb -oname: %+v", g)
	}

	var w watchFlags
	_, _ = parseCommand(t, "watch", w.register, "cm", "-Aowide")
	if !w.all || w.output != "wide" {
		t.Errorf("watch -Aowide: %+v", w)
	}

	var v verifyFlags
	_, _ = parseCommand(t, "verify", v.register, "-n", "web", "-o", "json")
	if v.namespace != "web" || v.output != "json" {
		t.Errorf("verify -n web -o json: %+v", v)
	}
}

func TestCommandHelp(t *testing.T) {
	for _, help := range []string{"-h", "--help"} {
		e, stdout, stderr := testEnv()
		var g getFlags
		cmd := newStreamCommand(e, "get", getSynopsis, ExitFindings)
		g.register(cmd.fs)
		if _, code := cmd.parse([]string{"cm", help}); code != ExitOK || stderr.Len() > 0 {
			t.Errorf("get %s: exit %d, stderr %q", help, code, stderr)
		}
		out := stdout.String()
		for _, want := range []string{"Usage: kubebridge get", "\nFlags:\n", "-n, --namespace string", "-A, --all-namespaces", "-o, --output string", "-h, --help", "\nConnection flags:\n", "-s, --server string", "--context string"} {
			if !strings.Contains(out, want) {
				t.Errorf("get %s does not print %q:\n%s", help, want, out)
			}
		}
		if flags, conn, _ := strings.Cut(out, "\nConnection flags:\n"); strings.Contains(flags, "--server") || strings.Contains(conn, "--namespace") {
			t.Errorf("get %s mixes the command's flags and the connection flags:\n%s", help, out)
		}
	}
}

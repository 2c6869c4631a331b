package cli

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
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

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var ns, out string
	var all bool
	stringVar(fs, &ns, []string{"n", "namespace"}, "", "")
	stringVar(fs, &out, []string{"o", "output"}, "", "")
	boolVar(fs, &all, []string{"A", "all-namespaces"}, "")
	pos, err := parseInterspersed(fs, []string{"configmaps", "-nweb", "a", "-oyaml", "-A", "b", "--", "-c"})
	if err != nil || !slices.Equal(pos, []string{"configmaps", "a", "b", "-c"}) || ns != "web" || out != "yaml" || !all {
		t.Errorf("got %q %v ns=%q o=%q A=%v", pos, err, ns, out, all)
	}
	if _, err := parseInterspersed(fs, []string{"-x"}); err == nil {
		t.Error("an unknown flag passed")
	}
}

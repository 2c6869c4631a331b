package config_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kubebridge/kubebridge/internal/config"
)

func TestWriteHelp(t *testing.T) {
	var buf bytes.Buffer
	if err := config.WriteHelp(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("help does not end with a newline")
	}

	// Lines by the variable in their first column.
	lines := map[string][]string{}
	var order []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		cols := strings.Fields(line)
		if len(cols) == 0 {
			continue
		}
		lines[cols[0]] = append(lines[cols[0]], line)
		order = append(order, cols[0])
	}

	fields := envFields(t)
	if len(order) != len(fields) {
		t.Errorf("help has %d variable lines, Config has %d env fields", len(order), len(fields))
	}
	keys := map[string]bool{}
	for i, f := range fields {
		keys[f.Key] = true
		t.Run(f.Key, func(t *testing.T) {
			ls := lines[f.Key]
			if len(ls) != 1 {
				t.Fatalf("%s is listed %d times, want once:\n%s", f.Key, len(ls), strings.Join(ls, "\n"))
			}
			if i < len(order) && order[i] != f.Key {
				t.Errorf("line %d lists %s, want %s (the struct's order)", i+1, order[i], f.Key)
			}
			cols := strings.Fields(ls[0])
			if len(cols) < 3 {
				t.Fatalf("line %q: want variable, default and meaning", ls[0])
			}
			wantDef := "(none)"
			switch {
			case f.Required:
				wantDef = "(required)"
			case f.HasDefault:
				wantDef = f.Default
			}
			if cols[1] != wantDef {
				t.Errorf("default column = %q, want %q", cols[1], wantDef)
			}
			help := f.Field.Tag.Get("help")
			if help == "" {
				t.Errorf("%s has no help tag", f.Key)
			}
			if !strings.HasSuffix(ls[0], help) {
				t.Errorf("line %q does not end with the help text %q", ls[0], help)
			}
		})
	}
	for k := range lines {
		if !keys[k] {
			t.Errorf("help lists %q, which is not a Config variable", k)
		}
	}

	// Only BRIDGE_RESOURCES is required.
	if got := lines["BRIDGE_RESOURCES"]; len(got) != 1 || strings.Fields(got[0])[1] != "(required)" {
		t.Errorf("BRIDGE_RESOURCES line = %q, want the (required) marker", got)
	}
	if n := strings.Count(out, "(required)"); n != 1 {
		t.Errorf("(required) appears %d times, want once", n)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestWriteHelpReportsWriteErrors(t *testing.T) {
	if err := config.WriteHelp(&failingWriter{}); err == nil {
		t.Error("WriteHelp to a failing writer returned nil")
	}
}

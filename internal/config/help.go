package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
)

// WriteHelp prints every variable with its default and meaning.
func WriteHelp(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("env"), ",")
		def := "(none)"
		for _, o := range strings.Split(opts, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(o), "default="); ok {
				def = v
			}
		}
		if f.Tag.Get("required") == "true" {
			def = "(required)"
		}
		if _, err := fmt.Fprintf(tw, "  %s\t%s\t%s\n", key, def, f.Tag.Get("help")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

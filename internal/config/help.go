package config

import (
	"fmt"
	"io"
	"reflect"
	"text/tabwriter"
)

// WriteHelp prints every variable with its default and meaning.
func WriteHelp(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := parseEnvTag(f)
		def := "(none)"
		switch {
		case tag.required:
			def = "(required)"
		case tag.hasDefault:
			def = tag.def
		}
		if _, err := fmt.Fprintf(tw, "  %s\t%s\t%s\n", tag.key, def, f.Tag.Get("help")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

package config

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// decode fills c from lookup, one variable at a time, each through
// go-envconfig's own decoding: envconfig stops at the first value it
// cannot decode, and decoding alone is how every other is still read. A
// variable set to "" counts as unset, so it takes its default:
// BRIDGE_REDACT_SECRETS= must not turn redaction off. A required variable
// that is unset is left to validate, which knows whether the configuration
// file stands in for it. A variable that cannot be decoded is reported and
// takes its default too, so that no single mistake hides another in the
// checks that follow. It returns the problems, one line per variable, and
// the variables they name.
func (c *Config) decode(ctx context.Context, lookup envconfig.Lookuper) (problems []string, bad map[string]bool) {
	set := envconfig.LookuperFunc(func(k string) (string, bool) {
		if v, ok := lookup.Lookup(k); ok && v != "" {
			return v, true
		}
		return "", false
	})
	bad = map[string]bool{}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key := parseEnvTag(f).key
		val, err := decodeField(ctx, f, set)
		if errors.Is(err, envconfig.ErrMissingRequired) {
			val, err = reflect.Zero(f.Type), nil // requiredRules
		}
		if err != nil {
			raw, _ := set.Lookup(key)
			problems = append(problems, decodeProblem(key, raw, err))
			bad[key] = true
			// Its default, which decodes (TestLoadDefaults), or its
			// zero value for a required variable.
			val, _ = decodeField(ctx, f, envconfig.MapLookuper(nil))
		}
		v.Field(i).Set(val)
	}
	return problems, bad
}

// decodeField decodes the variable of field f of Config, as
// envconfig.ProcessWith decodes it in a struct of its own: its tag's
// default and required options apply, and its type's decoder.
func decodeField(ctx context.Context, f reflect.StructField, lookup envconfig.Lookuper) (reflect.Value, error) {
	one := reflect.New(reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}}))
	err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: one.Interface(), Lookuper: lookup})
	return one.Elem().Field(0), err
}

// decodeProblem is the line reporting that variable key, set to raw,
// could not be decoded.
func decodeProblem(key, raw string, err error) string {
	// ProcessWith wraps the decoder's error in the field's name; the
	// variable's name says more.
	if cause := errors.Unwrap(err); cause != nil {
		err = cause
	}
	if raw == "" {
		return fmt.Sprintf("%s: %v", key, err)
	}
	return fmt.Sprintf("%s=%q: %v", key, raw, err)
}

// missing is what is said of required variable key when it is unset,
// after its name.
func missing(key string) string {
	if key == "BRIDGE_RESOURCES" {
		return ": required: name the resource types to watch, e.g. BRIDGE_RESOURCES='configmaps; deployments.apps', or list them in the resources of the configuration file BRIDGE_CONFIG names"
	}
	return ": required"
}

// envTag is a Config field's env tag as go-envconfig reads it: the
// variable, then options, of which a default= takes the rest of the tag.
type envTag struct {
	key, def   string
	hasDefault bool
	required   bool
}

func parseEnvTag(f reflect.StructField) envTag {
	key, rest, _ := strings.Cut(f.Tag.Get("env"), ",")
	t := envTag{key: strings.TrimSpace(key)}
	for rest != "" {
		if def, ok := strings.CutPrefix(strings.TrimLeft(rest, " "), "default="); ok {
			t.def, t.hasDefault = def, true
			break
		}
		var o string
		o, rest, _ = strings.Cut(rest, ",")
		t.required = t.required || strings.TrimSpace(o) == "required"
	}
	return t
}

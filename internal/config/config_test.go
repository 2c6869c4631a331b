package config_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubebridge/kubebridge/internal/config"
)

// envField is one field of config.Config as its struct tags describe it.
type envField struct {
	Field      reflect.StructField
	Index      int
	Key        string
	Default    string
	HasDefault bool
	Required   bool
}

// envFields lists the fields of config.Config with their env tags, parsed the
// way go-envconfig does: the key before the first comma, a required option,
// and a default= option taking the rest of the tag.
func envFields(t *testing.T) []envField {
	t.Helper()
	typ := reflect.TypeFor[config.Config]()
	var out []envField
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, ok := f.Tag.Lookup("env")
		if !ok {
			t.Fatalf("field %s has no env tag", f.Name)
		}
		key, opts, _ := strings.Cut(tag, ",")
		ef := envField{Field: f, Index: i, Key: strings.TrimSpace(key)}
		for _, o := range strings.Split(opts, ",") {
			ef.Required = ef.Required || strings.TrimSpace(o) == "required"
		}
		if j := strings.Index(opts, "default="); j >= 0 {
			ef.Default, ef.HasDefault = opts[j+len("default="):], true
		}
		if ef.Key == "" {
			t.Fatalf("field %s: empty env key in %q", f.Name, tag)
		}
		out = append(out, ef)
	}
	return out
}

// parseDefault converts a default= string into a value of the field's type,
// independently of go-envconfig.
func parseDefault(t *testing.T, f envField) reflect.Value {
	t.Helper()
	v := reflect.New(f.Field.Type).Elem()
	var err error
	switch {
	case f.Field.Type == reflect.TypeFor[time.Duration]():
		var d time.Duration
		d, err = time.ParseDuration(f.Default)
		v.SetInt(int64(d))
	case f.Field.Type == reflect.TypeFor[config.ByteSize]():
		var q resource.Quantity
		if q, err = resource.ParseQuantity(f.Default); err == nil {
			v.SetInt(q.Value())
		}
	case v.Kind() == reflect.String:
		v.SetString(f.Default)
	case v.Kind() == reflect.Bool:
		var b bool
		b, err = strconv.ParseBool(f.Default)
		v.SetBool(b)
	case v.CanInt():
		var n int64
		n, err = strconv.ParseInt(f.Default, 10, f.Field.Type.Bits())
		v.SetInt(n)
	case v.CanFloat():
		var x float64
		x, err = strconv.ParseFloat(f.Default, f.Field.Type.Bits())
		v.SetFloat(x)
	default:
		t.Fatalf("%s: no parser for a default of type %s", f.Key, f.Field.Type)
	}
	if err != nil {
		t.Fatalf("%s: default %q does not parse as %s: %v", f.Key, f.Default, f.Field.Type, err)
	}
	return v
}

// want is one expected problem line: it starts with Key (followed by '=',
// ':' or ' ') and contains every one of Subs.
type want struct {
	Key  string
	Subs []string
}

func p(key string, subs ...string) want { return want{Key: key, Subs: subs} }

func (w want) matches(line string) bool {
	rest, ok := strings.CutPrefix(line, w.Key)
	if !ok || rest == "" || !strings.ContainsRune("=: ", rune(rest[0])) {
		return false
	}
	for _, s := range w.Subs {
		if !strings.Contains(line, s) {
			return false
		}
	}
	return true
}

// env is BRIDGE_RESOURCES=configmaps plus the given key, value pairs.
func env(kv ...string) map[string]string {
	m := map[string]string{"BRIDGE_RESOURCES": "configmaps"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func load(m map[string]string) (*config.Config, error) {
	return config.Load(context.Background(), envconfig.MapLookuper(m))
}

// problems checks err is a *config.Error matching config.ErrInvalid whose
// problems are single lines, and returns them.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded, want an error")
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *config.Error: %v", err, err)
	}
	if got, want := ce.Error(), strings.Join(ce.Problems, "\n"); got != want {
		t.Errorf("Error() = %q, want the problems joined by newlines %q", got, want)
	}
	for _, line := range ce.Problems {
		if strings.ContainsAny(line, "\n\r") {
			t.Errorf("problem spans several lines: %q", line)
		}
		if strings.TrimSpace(line) == "" {
			t.Errorf("empty problem line in %q", ce.Problems)
		}
	}
	return ce.Problems
}

// checkProblems checks the problems are exactly the wanted ones, in any
// order.
func checkProblems(t *testing.T, err error, wants []want) {
	t.Helper()
	lines := problems(t, err)
	used := make([]bool, len(lines))
	for _, w := range wants {
		found := false
		for i, line := range lines {
			if !used[i] && w.matches(line) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no problem starting with %s and containing %q", w.Key, w.Subs)
		}
	}
	for i, line := range lines {
		if !used[i] {
			t.Errorf("unexpected problem: %s", line)
		}
	}
	if t.Failed() {
		t.Logf("all problems:\n%s", strings.Join(lines, "\n"))
	}
}

// tempFile creates an empty file in dir.
func tempFile(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadProblems(t *testing.T) {
	dir := t.TempDir()
	creds := tempFile(t, dir, "user.creds")
	nkey := tempFile(t, dir, "user.nk")
	ca, cert, key := tlsFiles(t, dir)
	missing := filepath.Join(dir, "missing.pem")
	const url = "nats://nats.example.com:4222"
	long := strings.Repeat("a", 64)

	tests := []struct {
		name string
		env  map[string]string
		want []want
	}{
		// Values go-envconfig cannot decode.
		{"resync period not a duration", env("BRIDGE_RESYNC_PERIOD", "x"), []want{p("BRIDGE_RESYNC_PERIOD", `"x"`, "invalid duration")}},
		{"ack timeout without unit", env("BRIDGE_PUBLISH_ACK_TIMEOUT", "5"), []want{p("BRIDGE_PUBLISH_ACK_TIMEOUT", `"5"`, "missing unit")}},
		{"max backoff not a duration", env("BRIDGE_PUBLISH_MAX_BACKOFF", "soon"), []want{p("BRIDGE_PUBLISH_MAX_BACKOFF", `"soon"`, "invalid duration")}},
		{"shutdown timeout not a duration", env("BRIDGE_SHUTDOWN_TIMEOUT", "20 s"), []want{p("BRIDGE_SHUTDOWN_TIMEOUT", `"20 s"`, "in duration")}},
		{"max age not a duration", env("BRIDGE_STREAM_MAX_AGE", "7d"), []want{p("BRIDGE_STREAM_MAX_AGE", `"7d"`, "unknown unit")}},
		{"duplicate window not a duration", env("BRIDGE_STREAM_DUPLICATE_WINDOW", "two"), []want{p("BRIDGE_STREAM_DUPLICATE_WINDOW", "invalid duration")}},
		{"buffer bytes not a quantity", env("BRIDGE_PUBLISH_BUFFER_BYTES", "lots"), []want{p("BRIDGE_PUBLISH_BUFFER_BYTES", `"lots"`, "not a byte quantity")}},
		{"buffer bytes fractional", env("BRIDGE_PUBLISH_BUFFER_BYTES", "1.5"), []want{p("BRIDGE_PUBLISH_BUFFER_BYTES", `"1.5"`, "not a whole number of bytes")}},
		{"publish window fractional", env("BRIDGE_PUBLISH_WINDOW", "1.5"), []want{p("BRIDGE_PUBLISH_WINDOW", `"1.5"`, "invalid syntax")}},
		{"encode workers not a number", env("BRIDGE_ENCODE_WORKERS", "many"), []want{p("BRIDGE_ENCODE_WORKERS", `"many"`, "invalid syntax")}},
		{"log verbosity not a number", env("BRIDGE_LOG_VERBOSITY", "high"), []want{p("BRIDGE_LOG_VERBOSITY", `"high"`, "invalid syntax")}},
		{"kube qps not a number", env("BRIDGE_KUBE_QPS", "fast"), []want{p("BRIDGE_KUBE_QPS", `"fast"`, "invalid syntax")}},
		{"kube burst not a number", env("BRIDGE_KUBE_BURST", "big"), []want{p("BRIDGE_KUBE_BURST", `"big"`, "invalid syntax")}},
		{"replicas not a number", env("BRIDGE_STREAM_REPLICAS", "three"), []want{p("BRIDGE_STREAM_REPLICAS", `"three"`, "invalid syntax")}},
		{"max bytes with unit", env("BRIDGE_STREAM_MAX_BYTES", "1GB"), []want{p("BRIDGE_STREAM_MAX_BYTES", `"1GB"`, "invalid syntax")}},
		{"redact secrets not a bool", env("BRIDGE_REDACT_SECRETS", "maybe"), []want{p("BRIDGE_REDACT_SECRETS", `"maybe"`, "invalid syntax")}},
		{"kube compression not a bool", env("BRIDGE_KUBE_COMPRESSION", "gzip"), []want{p("BRIDGE_KUBE_COMPRESSION", `"gzip"`, "invalid syntax")}},
		{"strip managed fields not a bool", env("BRIDGE_STRIP_MANAGED_FIELDS", "yes"), []want{p("BRIDGE_STRIP_MANAGED_FIELDS", `"yes"`, "invalid syntax")}},

		// Durations out of range.
		{"negative resync period", env("BRIDGE_RESYNC_PERIOD", "-1s"), []want{p("BRIDGE_RESYNC_PERIOD", "-1s", "must not be negative")}},
		{"negative max age", env("BRIDGE_STREAM_MAX_AGE", "-1h"), []want{p("BRIDGE_STREAM_MAX_AGE", "-1h", "must not be negative")}},
		{"negative shard selector refresh", env("BRIDGE_SHARD_SELECTOR_REFRESH", "-1m"), []want{p("BRIDGE_SHARD_SELECTOR_REFRESH", "-1m", "must not be negative")}},
		{"negative publish linger", env("BRIDGE_PUBLISH_LINGER", "-5ms"), []want{p("BRIDGE_PUBLISH_LINGER", "-5ms", "must not be negative")}},
		{"negative ack timeout", env("BRIDGE_PUBLISH_ACK_TIMEOUT", "-1s"), []want{p("BRIDGE_PUBLISH_ACK_TIMEOUT", "must be positive")}},
		{"zero ack timeout", env("BRIDGE_PUBLISH_ACK_TIMEOUT", "0s"), []want{p("BRIDGE_PUBLISH_ACK_TIMEOUT", "must be positive")}},
		{"negative max backoff", env("BRIDGE_PUBLISH_MAX_BACKOFF", "-1s"), []want{p("BRIDGE_PUBLISH_MAX_BACKOFF", "must be positive")}},
		{"max backoff below first retry", env("BRIDGE_PUBLISH_MAX_BACKOFF", "50ms"), []want{p("BRIDGE_PUBLISH_MAX_BACKOFF", "50ms", "at least 100ms")}},
		{"negative shutdown timeout", env("BRIDGE_SHUTDOWN_TIMEOUT", "-5s"), []want{p("BRIDGE_SHUTDOWN_TIMEOUT", "must be positive")}},
		{"zero duplicate window", env("BRIDGE_STREAM_DUPLICATE_WINDOW", "0"), []want{p("BRIDGE_STREAM_DUPLICATE_WINDOW", "must be positive")}},
		{"negative duplicate window", env("BRIDGE_STREAM_DUPLICATE_WINDOW", "-2m"), []want{p("BRIDGE_STREAM_DUPLICATE_WINDOW", "must be positive")}},

		// Numbers out of range.
		{"buffer bytes 0", env("BRIDGE_PUBLISH_BUFFER_BYTES", "0"), []want{p("BRIDGE_PUBLISH_BUFFER_BYTES", "=0", "at least 64Ki")}},
		{"buffer bytes negative", env("BRIDGE_PUBLISH_BUFFER_BYTES", "-1Mi"), []want{p("BRIDGE_PUBLISH_BUFFER_BYTES", "at least 64Ki")}},
		{"publish window 0", env("BRIDGE_PUBLISH_WINDOW", "0"), []want{p("BRIDGE_PUBLISH_WINDOW", "=0", "at least 1")}},
		{"encode workers negative", env("BRIDGE_ENCODE_WORKERS", "-1"), []want{p("BRIDGE_ENCODE_WORKERS", "must not be negative")}},
		{"log verbosity negative", env("BRIDGE_LOG_VERBOSITY", "-1"), []want{p("BRIDGE_LOG_VERBOSITY", "must not be negative")}},
		{"kube qps 0", env("BRIDGE_KUBE_QPS", "0"), []want{p("BRIDGE_KUBE_QPS", "must be positive")}},
		{"kube qps negative", env("BRIDGE_KUBE_QPS", "-5"), []want{p("BRIDGE_KUBE_QPS", "must be positive")}},
		{"kube burst 0", env("BRIDGE_KUBE_BURST", "0"), []want{p("BRIDGE_KUBE_BURST", "at least 1")}},
		{"replicas 0", env("BRIDGE_STREAM_REPLICAS", "0"), []want{p("BRIDGE_STREAM_REPLICAS", "=0", "between 1 and 5")}},
		{"replicas 6", env("BRIDGE_STREAM_REPLICAS", "6"), []want{p("BRIDGE_STREAM_REPLICAS", "=6", "between 1 and 5")}},
		{"max bytes 0", env("BRIDGE_STREAM_MAX_BYTES", "0"), []want{p("BRIDGE_STREAM_MAX_BYTES", "=0", "positive or -1")}},
		{"max bytes -2", env("BRIDGE_STREAM_MAX_BYTES", "-2"), []want{p("BRIDGE_STREAM_MAX_BYTES", "=-2", "positive or -1")}},
		{"max msgs per subject 0", env("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "0"), []want{p("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "=0", "positive or -1")}},
		{"max msgs per subject -2", env("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "-2"), []want{p("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "=-2", "positive or -1")}},
		{"max msgs per subject not a number", env("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "many"), []want{p("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", `"many"`, "invalid syntax")}},
		{"tombstone ttl below a second", env("BRIDGE_TOMBSTONE_TTL", "500ms"), []want{p("BRIDGE_TOMBSTONE_TTL", "500ms", "whole seconds, at least 1s")}},
		{"tombstone ttl fraction of a second", env("BRIDGE_TOMBSTONE_TTL", "1500ms"), []want{p("BRIDGE_TOMBSTONE_TTL", "1.5s", "whole seconds")}},
		{"tombstone ttl negative", env("BRIDGE_TOMBSTONE_TTL", "-1h"), []want{p("BRIDGE_TOMBSTONE_TTL", "-1h", "must be 0 (never expire)")}},
		{"tombstone ttl not a duration", env("BRIDGE_TOMBSTONE_TTL", "1d"), []want{p("BRIDGE_TOMBSTONE_TTL", `"1d"`, "unknown unit")}},

		// Names.
		{"cluster name uppercase", env("BRIDGE_CLUSTER_NAME", "Prod"), []want{p("BRIDGE_CLUSTER_NAME", `"Prod"`, "DNS label")}},
		{"cluster name underscore", env("BRIDGE_CLUSTER_NAME", "prod_eu"), []want{p("BRIDGE_CLUSTER_NAME", `"prod_eu"`, "DNS label")}},
		{"cluster name too long", env("BRIDGE_CLUSTER_NAME", long), []want{p("BRIDGE_CLUSTER_NAME", long, "DNS label")}},
		{"cluster name with dot", env("BRIDGE_CLUSTER_NAME", "prod.eu"), []want{p("BRIDGE_CLUSTER_NAME", "DNS label")}},
		{"cluster name leading dash", env("BRIDGE_CLUSTER_NAME", "-prod"), []want{p("BRIDGE_CLUSTER_NAME", "DNS label")}},
		{"subject prefix star", env("BRIDGE_SUBJECT_PREFIX", "events.*"), []want{p("BRIDGE_SUBJECT_PREFIX", `"events.*"`, "dot-separated tokens")}},
		{"subject prefix gt", env("BRIDGE_SUBJECT_PREFIX", "events.>"), []want{p("BRIDGE_SUBJECT_PREFIX", `"events.>"`, "dot-separated tokens")}},
		{"subject prefix space", env("BRIDGE_SUBJECT_PREFIX", "my events"), []want{p("BRIDGE_SUBJECT_PREFIX", "dot-separated tokens")}},
		{"subject prefix empty token", env("BRIDGE_SUBJECT_PREFIX", "a..b"), []want{p("BRIDGE_SUBJECT_PREFIX", `"a..b"`, "dot-separated tokens")}},
		{"subject prefix leading dot", env("BRIDGE_SUBJECT_PREFIX", ".a"), []want{p("BRIDGE_SUBJECT_PREFIX", "dot-separated tokens")}},
		{"subject prefix trailing dot", env("BRIDGE_SUBJECT_PREFIX", "a."), []want{p("BRIDGE_SUBJECT_PREFIX", "dot-separated tokens")}},
		{"stream name with dot", env("BRIDGE_STREAM_NAME", "KUBE.BRIDGE"), []want{p("BRIDGE_STREAM_NAME", `"KUBE.BRIDGE"`, "letters, digits")}},
		{"stream name with space", env("BRIDGE_STREAM_NAME", "KUBE BRIDGE"), []want{p("BRIDGE_STREAM_NAME", "letters, digits")}},
		{"stream name wildcard", env("BRIDGE_STREAM_NAME", "KUBE*"), []want{p("BRIDGE_STREAM_NAME", "letters, digits")}},
		{"storage disk", env("BRIDGE_STREAM_STORAGE", "disk"), []want{p("BRIDGE_STREAM_STORAGE", `"disk"`, "file or memory")}},
		{"storage capitalised", env("BRIDGE_STREAM_STORAGE", "File"), []want{p("BRIDGE_STREAM_STORAGE", "file or memory")}},
		{"namespaces uppercase", env("BRIDGE_NAMESPACES", "web,Bad_NS"), []want{p("BRIDGE_NAMESPACES", `"Bad_NS"`, "not a namespace name")}},
		{"namespaces two bad", env("BRIDGE_NAMESPACES", "a_b, web, C"), []want{p("BRIDGE_NAMESPACES", `"a_b"`, "not a namespace name"), p("BRIDGE_NAMESPACES", `"C"`, "not a namespace name")}},

		// BRIDGE_RESOURCES.
		{"resources missing", map[string]string{}, []want{p("BRIDGE_RESOURCES", "required")}},
		{"resources empty", env("BRIDGE_RESOURCES", ""), []want{p("BRIDGE_RESOURCES", "required")}},
		{"resources only separators", env("BRIDGE_RESOURCES", " ; "), []want{p("BRIDGE_RESOURCES", "required")}},
		{"resources only blank lines", env("BRIDGE_RESOURCES", "\n \n;\t\n"), []want{p("BRIDGE_RESOURCES", "required")}},
		{"label selector malformed", env("BRIDGE_RESOURCES", "pods | labels=app in (web"), []want{p("BRIDGE_RESOURCES", `pods: label selector "app in (web"`)}},
		{"label selector bad operator", env("BRIDGE_RESOURCES", "pods | l=app ~ web"), []want{p("BRIDGE_RESOURCES", "pods: label selector")}},
		{"field selector malformed", env("BRIDGE_RESOURCES", "pods | fields=status.phase"), []want{p("BRIDGE_RESOURCES", `pods: field selector "status.phase"`)}},
		{"field selector bad value", env("BRIDGE_RESOURCES", "pods | f=a==b==c"), []want{p("BRIDGE_RESOURCES", "pods: field selector")}},
		{"unknown option", env("BRIDGE_RESOURCES", "pods | color=red"), []want{p("BRIDGE_RESOURCES", `pods: unknown option "color"`)}},
		{"option without equals", env("BRIDGE_RESOURCES", "pods | labels"), []want{p("BRIDGE_RESOURCES", `pods: option "labels" is not key=value`)}},
		{"empty option", env("BRIDGE_RESOURCES", "pods |"), []want{p("BRIDGE_RESOURCES", "pods: option", "not key=value")}},
		{"namespaces given twice by alias", env("BRIDGE_RESOURCES", "pods | ns=a | namespace=b"), []want{p("BRIDGE_RESOURCES", "pods: option namespaces given twice")}},
		{"labels given twice", env("BRIDGE_RESOURCES", "pods | l=a=b | labels=c=d"), []want{p("BRIDGE_RESOURCES", "pods: option labels given twice")}},
		{"fields given twice", env("BRIDGE_RESOURCES", "pods | f=a=b | f=c=d"), []want{p("BRIDGE_RESOURCES", "pods: option fields given twice")}},
		{"bad namespace in option", env("BRIDGE_RESOURCES", "pods | ns=web,Bad_NS"), []want{p("BRIDGE_RESOURCES", `pods: "Bad_NS" is not a namespace name`)}},
		{"empty namespace in option", env("BRIDGE_RESOURCES", "pods | namespaces="), []want{p("BRIDGE_RESOURCES", `pods: "" is not a namespace name`)}},
		{"resource name with space", env("BRIDGE_RESOURCES", "config maps"), []want{p("BRIDGE_RESOURCES", `"config maps": expected a resource name`)}},
		{"resource name with equals", env("BRIDGE_RESOURCES", "namespaces=web"), []want{p("BRIDGE_RESOURCES", `"namespaces=web": expected a resource name`)}},
		{"resource name missing", env("BRIDGE_RESOURCES", "| ns=web"), []want{p("BRIDGE_RESOURCES", "expected a resource name")}},
		{"resource name with slash", env("BRIDGE_RESOURCES", "apps/v1/deployments"), []want{p("BRIDGE_RESOURCES", "expected a resource name")}},
		{"two bad entries on one line", env("BRIDGE_RESOURCES", "config maps; secrets; pods | x=y"), []want{p("BRIDGE_RESOURCES", `"config maps": expected a resource name`, `pods: unknown option "x"`)}},

		// NATS.
		{"nats url http", env("NATS_URL", "http://nats.example.com:4222"), []want{p("NATS_URL", `"http://nats.example.com:4222"`, "must use nats://")}},
		{"nats url without scheme", env("NATS_URL", "nats.example.com"), []want{p("NATS_URL", "must use nats://")}},
		{"nats url without host", env("NATS_URL", "nats://"), []want{p("NATS_URL", `"nats://"`, "has no host")}},
		{"nats url with port only", env("NATS_URL", "nats://:4222"), []want{p("NATS_URL", "has no host")}},
		{"nats url one bad of two", env("NATS_URL", url+", http://b:4222"), []want{p("NATS_URL", `"http://b:4222"`, "must use nats://")}},
		{"nats url not a url", env("NATS_URL", "nats://host:port"), []want{p("NATS_URL", "is not a URL")}},
		{"creds without url", env("NATS_CREDS", creds), []want{p("NATS_CREDS", "NATS_URL is not", "embedded")}},
		{"nkey without url", env("NATS_NKEY", nkey), []want{p("NATS_NKEY", "NATS_URL is not")}},
		{"token without url", env("NATS_TOKEN", "t0ken"), []want{p("NATS_TOKEN", "NATS_URL is not")}},
		{"user and password without url", env("NATS_USER", "u", "NATS_PASSWORD", "pw"), []want{p("NATS_USER", "NATS_URL is not"), p("NATS_PASSWORD", "NATS_URL is not")}},
		{"tls without url", env("NATS_CA", ca, "NATS_CERT", cert, "NATS_KEY", key), []want{p("NATS_CA", "NATS_URL is not"), p("NATS_CERT", "NATS_URL is not"), p("NATS_KEY", "NATS_URL is not")}},
		{"embedded listen with url", env("NATS_URL", url, "BRIDGE_EMBEDDED_NATS_LISTEN", "0.0.0.0:4222"), []want{p("BRIDGE_EMBEDDED_NATS_LISTEN", "together with NATS_URL")}},
		{"embedded store dir with url", env("NATS_URL", url, "BRIDGE_EMBEDDED_NATS_STORE_DIR", dir), []want{p("BRIDGE_EMBEDDED_NATS_STORE_DIR", "together with NATS_URL")}},
		{"token and creds", env("NATS_URL", url, "NATS_TOKEN", "t0ken", "NATS_CREDS", creds), []want{p("NATS_CREDS", "NATS_CREDS and NATS_TOKEN are set together", "one NATS authentication method")}},
		{"nkey and user", env("NATS_URL", url, "NATS_NKEY", nkey, "NATS_USER", "u", "NATS_PASSWORD", "pw"), []want{p("NATS_NKEY", "NATS_NKEY and NATS_USER are set together")}},
		{"user without password", env("NATS_URL", url, "NATS_USER", "u"), []want{p("NATS_USER", "NATS_PASSWORD must be set together")}},
		{"password without user", env("NATS_URL", url, "NATS_PASSWORD", "pw"), []want{p("NATS_USER", "NATS_PASSWORD must be set together")}},
		{"cert without key", env("NATS_URL", url, "NATS_CERT", cert), []want{p("NATS_CERT", "NATS_KEY must be set together")}},
		{"key without cert", env("NATS_URL", url, "NATS_KEY", key), []want{p("NATS_CERT", "NATS_KEY must be set together")}},
		{"ca missing", env("NATS_URL", url, "NATS_CA", missing), []want{p("NATS_CA", missing, "cannot read the file", "no such file")}},
		{"creds missing", env("NATS_URL", url, "NATS_CREDS", missing), []want{p("NATS_CREDS", "cannot read the file")}},
		{"nkey missing", env("NATS_URL", url, "NATS_NKEY", missing), []want{p("NATS_NKEY", "cannot read the file")}},
		{"cert and key missing", env("NATS_URL", url, "NATS_CERT", missing, "NATS_KEY", missing), []want{p("NATS_CERT", "cannot read the file"), p("NATS_KEY", "cannot read the file")}},
		// A directory passes os.Stat but is not a readable PEM bundle.
		{"ca is a directory", env("NATS_URL", url, "NATS_CA", dir), []want{p("NATS_CA", "is a directory")}},
		// The embedded server can only listen on a host:port.
		{"embedded listen not host:port", env("BRIDGE_EMBEDDED_NATS_LISTEN", "localhost"), []want{p("BRIDGE_EMBEDDED_NATS_LISTEN", "host:port")}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if seen[tt.name] {
			t.Fatalf("duplicate test name %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.env)
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want problems %v", *c, tt.want)
			}
			if c != nil {
				t.Errorf("Load returned a config together with an error")
			}
			checkProblems(t, err, tt.want)
		})
	}
}

// Every variable with a type go-envconfig parses reports its own problem
// when its value cannot be parsed.
func TestLoadUnparsableValueOfEveryTypedVariable(t *testing.T) {
	for _, f := range envFields(t) {
		if f.Field.Type.Kind() == reflect.String || f.Field.Type == reflect.TypeFor[[]string]() {
			continue
		}
		t.Run(f.Key, func(t *testing.T) {
			m := env()
			m[f.Key] = "not valid at all"
			if f.Key == "BRIDGE_RESOURCES" {
				m[f.Key] = "not valid | at all"
			}
			_, err := load(m)
			checkProblems(t, err, []want{p(f.Key, `="not valid`)})
		})
	}
}

func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []want
	}{
		{
			name: "five different variables",
			env: env(
				"BRIDGE_RESYNC_PERIOD", "x",
				"BRIDGE_PUBLISH_BUFFER_BYTES", "0",
				"BRIDGE_CLUSTER_NAME", "Bad_Name",
				"BRIDGE_STREAM_STORAGE", "disk",
				"NATS_URL", "http://nats.example.com",
			),
			want: []want{
				p("BRIDGE_RESYNC_PERIOD", "invalid duration"),
				p("BRIDGE_PUBLISH_BUFFER_BYTES", "at least 64Ki"),
				p("BRIDGE_CLUSTER_NAME", "DNS label"),
				p("BRIDGE_STREAM_STORAGE", "file or memory"),
				p("NATS_URL", "must use nats://"),
			},
		},
		{
			name: "several unparsable values and missing resources",
			env: map[string]string{
				"BRIDGE_RESYNC_PERIOD":           "x",
				"BRIDGE_PUBLISH_BUFFER_BYTES":    "abc",
				"BRIDGE_KUBE_QPS":                "fast",
				"BRIDGE_REDACT_SECRETS":          "maybe",
				"BRIDGE_STREAM_MAX_BYTES":        "1GB",
				"BRIDGE_STREAM_DUPLICATE_WINDOW": "soon",
				"BRIDGE_STREAM_REPLICAS":         "9",
				"NATS_USER":                      "u",
			},
			want: []want{
				p("BRIDGE_RESOURCES", "required"),
				p("BRIDGE_RESYNC_PERIOD", "invalid duration"),
				p("BRIDGE_PUBLISH_BUFFER_BYTES", "not a byte quantity"),
				p("BRIDGE_KUBE_QPS", "invalid syntax"),
				p("BRIDGE_REDACT_SECRETS", "invalid syntax"),
				p("BRIDGE_STREAM_MAX_BYTES", "invalid syntax"),
				p("BRIDGE_STREAM_DUPLICATE_WINDOW", "invalid duration"),
				p("BRIDGE_STREAM_REPLICAS", "between 1 and 5"),
				p("NATS_USER", "NATS_URL is not"),
				p("NATS_USER", "NATS_PASSWORD must be set together"),
			},
		},
		{
			name: "bad resources and other problems",
			env: map[string]string{
				"BRIDGE_RESOURCES":      "pods | color=red\nconfig maps",
				"BRIDGE_NAMESPACES":     "Web",
				"BRIDGE_PUBLISH_WINDOW": "0",
				"BRIDGE_SUBJECT_PREFIX": "a..b",
				"BRIDGE_STREAM_NAME":    "A.B",
				"NATS_URL":              "nats://",
				"NATS_CERT":             "/no/such/cert.pem",
			},
			want: []want{
				p("BRIDGE_RESOURCES", `pods: unknown option "color"`, `"config maps"`),
				p("BRIDGE_NAMESPACES", `"Web"`),
				p("BRIDGE_PUBLISH_WINDOW", "at least 1"),
				p("BRIDGE_SUBJECT_PREFIX", "dot-separated"),
				p("BRIDGE_STREAM_NAME", "letters, digits"),
				p("NATS_URL", "has no host"),
				p("NATS_CERT", "NATS_KEY must be set together"),
				p("NATS_CERT", "cannot read the file"),
			},
		},
		{
			name: "values with newlines stay one line each",
			env: map[string]string{
				"BRIDGE_RESOURCES":      "config maps\npods | x=y\nsecrets",
				"BRIDGE_CLUSTER_NAME":   "a\nb",
				"BRIDGE_PUBLISH_WINDOW": "1\n2",
				"BRIDGE_NAMESPACES":     "a\nb",
				"BRIDGE_STREAM_NAME":    "A\nB",
				"NATS_URL":              "nats://a\nb:4222",
				"NATS_CA":               "/no/such\nfile",
			},
			want: []want{
				p("BRIDGE_RESOURCES", "config maps", `pods: unknown option "x"`),
				p("BRIDGE_CLUSTER_NAME", "DNS label"),
				p("BRIDGE_PUBLISH_WINDOW", "invalid syntax"),
				p("BRIDGE_NAMESPACES", "not a namespace name"),
				p("BRIDGE_STREAM_NAME", "letters, digits"),
				p("NATS_URL", "not a URL"),
				p("NATS_CA", "cannot read the file"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env)
			lines := problems(t, err)
			if len(lines) != len(tt.want) {
				t.Errorf("got %d problems, want %d", len(lines), len(tt.want))
			}
			checkProblems(t, err, tt.want)
		})
	}
}

// Every typed variable wrong at once: the decode loop must find them all.
func TestLoadEveryTypedVariableWrongAtOnce(t *testing.T) {
	m := map[string]string{}
	var wants []want
	for _, f := range envFields(t) {
		if f.Field.Type.Kind() == reflect.String || f.Field.Type == reflect.TypeFor[[]string]() {
			continue
		}
		v := "? " + f.Key // a space makes it wrong for BRIDGE_RESOURCES too
		m[f.Key] = v
		wants = append(wants, p(f.Key, strconv.Quote(v)))
	}
	_, err := load(m)
	checkProblems(t, err, wants)
}

const secret = "s3cret"

// No problem message prints a password or token.
func TestLoadNeverPrintsSecrets(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"password in url without host", env("NATS_URL", "nats://user:"+secret+"@:4222")},
		{"password in url with empty host", env("NATS_URL", "nats://user:"+secret+"@")},
		{"password in http url", env("NATS_URL", "http://user:"+secret+"@nats.example.com:4222")},
		{"password in unparsable url", env("NATS_URL", "nats://user:"+secret+"@nats.example.com:port")},
		{"password in url with bad escape", env("NATS_URL", "nats://user:"+secret+"@host:4222/%zz")},
		{"password in url without scheme", env("NATS_URL", "user:"+secret+"@nats.example.com:4222")},
		{"password in second url", env("NATS_URL", "nats://a:4222, http://user:"+secret+"@b:4222")},
		{"token as url user", env("NATS_URL", "http://"+secret+"@nats.example.com:4222")},
		{"token as url user without host", env("NATS_URL", "nats://"+secret+"@")},
		{"password in url and embedded listen", env("NATS_URL", "nats://user:"+secret+"@h:4222", "BRIDGE_EMBEDDED_NATS_LISTEN", ":4222")},
		{"password variable without user", env("NATS_URL", "nats://h:4222", "NATS_PASSWORD", secret)},
		{"password variable without url", env("NATS_USER", "u", "NATS_PASSWORD", secret)},
		{"token variable without url", env("NATS_TOKEN", secret)},
		{"token variable with creds", env("NATS_URL", "nats://h:4222", "NATS_TOKEN", secret, "NATS_CREDS", "/no/such/file")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env)
			if err == nil {
				t.Fatalf("Load(%v) succeeded, want an error", tt.env)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error prints the secret:\n%v", err)
			}
		})
	}
}

func TestRedactedNATSURL(t *testing.T) {
	tests := []struct {
		url      string
		contains []string
	}{
		{"nats://nats.example.com:4222", []string{"nats://nats.example.com:4222"}},
		{"nats://user:" + secret + "@nats.example.com:4222", []string{"user", "nats.example.com:4222"}},
		{"nats://" + secret + "@nats.example.com:4222", []string{"nats.example.com:4222"}},
		{"tls://a:4222, wss://user:" + secret + "@b:443", []string{"tls://a:4222", "b:443"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := load(env("NATS_URL", tt.url))
			if err != nil {
				t.Fatal(err)
			}
			got := c.RedactedNATSURL()
			if strings.Contains(got, secret) {
				t.Errorf("RedactedNATSURL() = %q, prints the secret", got)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("RedactedNATSURL() = %q, want it to contain %q", got, s)
				}
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	c, err := load(env())
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(*c)
	for _, f := range envFields(t) {
		v := got.Field(f.Index)
		switch {
		case f.HasDefault:
			if f.Required {
				t.Errorf("%s is both required and has a default", f.Key)
			}
			if want := parseDefault(t, f); !reflect.DeepEqual(v.Interface(), want.Interface()) {
				t.Errorf("%s = %v, want the tag's default %v (%q)", f.Key, v.Interface(), want.Interface(), f.Default)
			}
		case f.Key == "BRIDGE_RESOURCES":
			want := config.Resources{{Name: "configmaps"}}
			if !reflect.DeepEqual(c.Resources, want) {
				t.Errorf("Resources = %+v, want %+v", c.Resources, want)
			}
		case f.Key == "BRIDGE_EMBEDDED_NATS_STORE_DIR":
			if want := filepath.Join(os.TempDir(), "kubebridge-jetstream"); c.EmbeddedNATSStoreDir != want {
				t.Errorf("%s = %q, want %q", f.Key, c.EmbeddedNATSStoreDir, want)
			}
		default:
			if !v.IsZero() && !(v.Kind() == reflect.Slice && v.Len() == 0) {
				t.Errorf("%s = %v, want the zero value (no default in its tag)", f.Key, v.Interface())
			}
		}
	}
}

// An explicitly empty variable must not silently turn a setting into its
// zero value: it either means the default or is reported. In particular
// BRIDGE_REDACT_SECRETS= must not publish Secret values.
func TestLoadEmptyValueIsDefaultOrProblem(t *testing.T) {
	for _, f := range envFields(t) {
		if !f.HasDefault {
			continue
		}
		t.Run(f.Key, func(t *testing.T) {
			c, err := load(env(f.Key, ""))
			if err != nil {
				checkProblems(t, err, []want{p(f.Key)})
				return
			}
			v := reflect.ValueOf(*c).Field(f.Index)
			if want := parseDefault(t, f); !reflect.DeepEqual(v.Interface(), want.Interface()) {
				t.Errorf("%s= loads as %v without a problem; want the default %v or a problem", f.Key, v.Interface(), want.Interface())
			}
		})
	}
}

func TestLoadValid(t *testing.T) {
	dir := t.TempDir()
	creds := tempFile(t, dir, "user.creds")
	ca, cert, key := tlsFiles(t, dir)

	tests := []struct {
		name  string
		env   map[string]string
		check func(*testing.T, *config.Config)
	}{
		{"zero resync and max age", env("BRIDGE_RESYNC_PERIOD", "0", "BRIDGE_STREAM_MAX_AGE", "0s"), func(t *testing.T, c *config.Config) {
			if c.ResyncPeriod != 0 || c.StreamMaxAge != 0 {
				t.Errorf("ResyncPeriod, StreamMaxAge = %v, %v, want 0, 0", c.ResyncPeriod, c.StreamMaxAge)
			}
		}},
		{"limits", env("BRIDGE_STREAM_REPLICAS", "5", "BRIDGE_STREAM_MAX_BYTES", "1", "BRIDGE_PUBLISH_MAX_BACKOFF", "100ms", "BRIDGE_PUBLISH_BUFFER_BYTES", "64Ki", "BRIDGE_PUBLISH_WINDOW", "1", "BRIDGE_STREAM_STORAGE", "memory"), func(t *testing.T, c *config.Config) {
			if c.StreamReplicas != 5 || c.StreamMaxBytes != 1 || c.PublishMaxBackoff != 100*time.Millisecond || c.PublishBufferBytes != 64<<10 || c.PublishWindow != 1 || c.StreamStorage != "memory" {
				t.Errorf("got %+v", *c)
			}
		}},
		{"compaction and tombstones", env("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "1", "BRIDGE_TOMBSTONE_TTL", "3s"), func(t *testing.T, c *config.Config) {
			if c.StreamMaxMsgsPerSubject != 1 || c.TombstoneTTL != 3*time.Second {
				t.Errorf("StreamMaxMsgsPerSubject, TombstoneTTL = %v, %v, want 1, 3s", c.StreamMaxMsgsPerSubject, c.TombstoneTTL)
			}
		}},
		{"unlimited per subject, tombstones kept", env("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "-1", "BRIDGE_TOMBSTONE_TTL", "0"), func(t *testing.T, c *config.Config) {
			if c.StreamMaxMsgsPerSubject != -1 || c.TombstoneTTL != 0 {
				t.Errorf("StreamMaxMsgsPerSubject, TombstoneTTL = %v, %v, want -1, 0", c.StreamMaxMsgsPerSubject, c.TombstoneTTL)
			}
		}},
		{"names", env("BRIDGE_CLUSTER_NAME", strings.Repeat("a", 63), "BRIDGE_SUBJECT_PREFIX", "acme.k8s-events_v1", "BRIDGE_STREAM_NAME", "k8s_EVENTS-1", "BRIDGE_NAMESPACES", "web, api ,kube-system"), func(t *testing.T, c *config.Config) {
			if want := []string{"web", "api", "kube-system"}; !reflect.DeepEqual(c.Namespaces, want) {
				t.Errorf("Namespaces = %q, want %q", c.Namespaces, want)
			}
			if c.SubjectPrefix != "acme.k8s-events_v1" || c.StreamName != "k8s_EVENTS-1" {
				t.Errorf("got %+v", *c)
			}
		}},
		{"embedded server settings", env("BRIDGE_EMBEDDED_NATS_LISTEN", "0.0.0.0:14222", "BRIDGE_EMBEDDED_NATS_STORE_DIR", dir), func(t *testing.T, c *config.Config) {
			if c.EmbeddedNATSListen != "0.0.0.0:14222" || c.EmbeddedNATSStoreDir != dir {
				t.Errorf("got %+v", *c)
			}
		}},
		{"nats with user and tls", env("NATS_URL", "tls://a:4222,wss://b:443/ws, nats://c", "NATS_USER", "u", "NATS_PASSWORD", "pw", "NATS_CA", ca, "NATS_CERT", cert, "NATS_KEY", key), func(t *testing.T, c *config.Config) {
			if c.NATSUser != "u" || c.NATSPassword != "pw" || c.NATSCA != ca || c.NATSCert != cert || c.NATSKey != key {
				t.Errorf("got %+v", *c)
			}
		}},
		{"nats with creds", env("NATS_URL", "nats://a:4222", "NATS_CREDS", creds), func(t *testing.T, c *config.Config) {
			if c.NATSCreds != creds {
				t.Errorf("NATSCreds = %q", c.NATSCreds)
			}
		}},
		{"nats with token", env("NATS_URL", "ws://a:8080", "NATS_TOKEN", "t"), func(t *testing.T, c *config.Config) {
			if c.NATSToken != "t" || c.NATSURL != "ws://a:8080" {
				t.Errorf("got %+v", *c)
			}
		}},
		{"empty nats variables count as unset", env("NATS_TOKEN", "", "NATS_USER", "", "NATS_CA", ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestLoadFromProcessEnvironment(t *testing.T) {
	for _, f := range envFields(t) {
		t.Setenv(f.Key, "") // restored after the test
		if err := os.Unsetenv(f.Key); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("BRIDGE_RESOURCES", "cm; deploy")
	t.Setenv("BRIDGE_PUBLISH_BUFFER_BYTES", "8Mi")
	c, err := config.Load(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Resources) != 2 || c.PublishBufferBytes != 8<<20 {
		t.Errorf("got %+v", *c)
	}
}

func TestRemovedVariables(t *testing.T) {
	lookup := func(env map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	if got := config.Removed(lookup(map[string]string{"BRIDGE_RESOURCES": "cm"})); len(got) != 0 {
		t.Errorf("Removed() = %q with no removed variable set", got)
	}
	got := config.Removed(lookup(map[string]string{"BRIDGE_QUEUE_SIZE": "100"}))
	if len(got) != 1 || !strings.HasPrefix(got[0], "BRIDGE_QUEUE_SIZE is set but no longer used") || !strings.Contains(got[0], "BRIDGE_PUBLISH_BUFFER_BYTES") {
		t.Errorf("Removed() = %q", got)
	}
}

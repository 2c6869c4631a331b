package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
)

// natsRules check NATS_URL, or without it the embedded server's settings.
func (c *Config) natsRules(set func(string) bool) []rule {
	embedded := c.NATSURL == ""
	rules := []rule{
		{"BRIDGE_EMBEDDED_NATS_LISTEN", embedded && !isHostPort(c.EmbeddedNATSListen), fmt.Sprintf("=%q: must be host:port, e.g. 127.0.0.1:4222", c.EmbeddedNATSListen)},
	}
	for _, k := range []string{"NATS_CREDS", "NATS_NKEY", "NATS_TOKEN", "NATS_USER", "NATS_PASSWORD", "NATS_CA", "NATS_CERT", "NATS_KEY",
		"NATS_TLS_CA", "NATS_TLS_CERT", "NATS_TLS_KEY", "NATS_TLS_SERVER_NAME", "NATS_JS_DOMAIN"} {
		rules = append(rules, rule{k, embedded && set(k), " is set but NATS_URL is not: the embedded NATS server takes no credentials, TLS or JetStream domain"})
	}
	for _, k := range []string{"BRIDGE_EMBEDDED_NATS_LISTEN", "BRIDGE_EMBEDDED_NATS_STORE_DIR"} {
		rules = append(rules, rule{k, !embedded && set(k), " is set together with NATS_URL: it only applies to the embedded server used without NATS_URL"})
	}
	if !embedded {
		for _, raw := range strings.Split(c.NATSURL, ",") {
			rules = append(rules, natsURLRule(strings.TrimSpace(raw)))
		}
	}
	return rules
}

// natsURLRule checks one URL of NATS_URL.
func natsURLRule(raw string) rule {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return rule{"NATS_URL", true, fmt.Sprintf(": %q is not a URL", redactURL(raw))}
	case !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme):
		return rule{"NATS_URL", true, fmt.Sprintf(": %q must use nats://, tls://, ws:// or wss://", redactURL(raw))}
	}
	return rule{"NATS_URL", u.Hostname() == "", fmt.Sprintf(": %q has no host", redactURL(raw))}
}

// natsAuthRules check that the NATS credentials go together and that
// their files can be read.
func (c *Config) natsAuthRules(set func(string) bool) []rule {
	var methods []string
	for _, k := range []string{"NATS_CREDS", "NATS_NKEY", "NATS_TOKEN", "NATS_USER"} {
		if set(k) {
			methods = append(methods, k)
		}
	}
	rules := []rule{
		oneOf(methods),
		{"NATS_USER", set("NATS_USER") != set("NATS_PASSWORD"), " and NATS_PASSWORD must be set together"},
	}
	for _, f := range []struct{ key, path string }{
		{"NATS_CREDS", c.NATSCreds}, {"NATS_NKEY", c.NATSNKey},
	} {
		rules = append(rules, fileRule(f.key, f.path))
	}
	return rules
}

// oneOf is broken when more than one of the authentication methods set is.
func oneOf(methods []string) rule {
	if len(methods) < 2 {
		return rule{}
	}
	return rule{methods[0], true, " and " + strings.Join(methods[1:], " and ") + " are set together: choose one NATS authentication method"}
}

// fileRule is broken when variable key names a file that cannot be read;
// unset, it names none.
func fileRule(key, path string) rule {
	if path == "" {
		return rule{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return rule{key, true, fmt.Sprintf("=%q: cannot read the file: %v", path, errors.Unwrap(err))}
	}
	return rule{key, fi.IsDir(), fmt.Sprintf("=%q: cannot read the file: is a directory", path)}
}

// redactURL hides a password or token in a URL meant for a message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.User != nil {
		// nats://TOKEN@host carries a token where a user name would be.
		if _, hasPassword := u.User.Password(); !hasPassword {
			u.User = url.User("xxxxx")
		}
		return u.Redacted()
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "***" + raw[i:]
	}
	return raw
}

// RedactedNATSURL is NATS_URL with any password replaced, for logs.
func (c *Config) RedactedNATSURL() string {
	parts := strings.Split(c.NATSURL, ",")
	for i, p := range parts {
		parts[i] = redactURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

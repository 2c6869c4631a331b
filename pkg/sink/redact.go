package sink

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// masked replaces secrets, as url.URL.Redacted masks passwords.
const masked = "xxxxx"

// RedactURLs returns list, NATS server URLs separated by commas as NATS_URL
// holds them, fit for a log line: passwords are masked, a user-info without
// a password (which nats.go sends as a token) is masked whole, and a URL
// that does not parse is replaced by "(unparseable URL)", since where its
// secret is cannot be known.
func RedactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = redact(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// parseServerURL parses raw as nats.go does: without "://" it is a
// nats:// URL, so "TOKEN@host:4222" carries a token.
func parseServerURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	return url.Parse(raw)
}

func redact(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := parseServerURL(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), masked)
		} else {
			u.User = url.User(masked)
		}
	}
	return u.String()
}

// redactor masks the secrets of a URL list in any text, such as an error
// message: url.Parse's errors quote the whole URL, and an error may hold a
// URL re-encoded or a secret decoded.
type redactor struct {
	urls    []string // as given, longest first
	secrets []string // longest first
}

func newRedactor(list string) *redactor {
	r := &redactor{}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			r.urls = append(r.urls, p)
			r.secrets = append(r.secrets, secretsOf(p)...)
		}
	}
	longestFirst := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(r.urls, longestFirst)
	slices.SortFunc(r.secrets, longestFirst)
	r.secrets = slices.Compact(r.secrets)
	return r
}

// secretsOf returns the secret of raw in every form a text may show it:
// as written, decoded, and encoded as url.URL.String encodes it. It does not
// rely on raw parsing: the user-info is whatever comes before the last "@"
// after the scheme, which may mask more than nats.go would send, never less.
func secretsOf(raw string) []string {
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	userinfo := rest[:at]
	secret, isPassword := userinfo, false
	if _, pass, ok := strings.Cut(userinfo, ":"); ok {
		secret, isPassword = pass, true
	}
	forms := []string{secret}
	if dec, err := url.PathUnescape(secret); err == nil {
		forms = append(forms, dec)
		if isPassword {
			forms = append(forms, strings.TrimPrefix(url.UserPassword("", dec).String(), ":"))
		} else {
			forms = append(forms, url.User(dec).String())
		}
	}
	return slices.DeleteFunc(forms, func(s string) bool { return s == "" })
}

// text returns s with every URL of the list redacted and every secret
// masked.
func (r *redactor) text(s string) string {
	for _, u := range r.urls {
		red := redact(u)
		s = strings.ReplaceAll(s, u, red)
		// %q, as url.Error uses, escapes what is not printable.
		if q := strconv.Quote(u); q[1:len(q)-1] != u {
			s = strings.ReplaceAll(s, q[1:len(q)-1], red)
		}
	}
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, masked)
	}
	return s
}

// err returns err, or, if its text shows a secret, an error with the text
// masked. That error answers errors.Is for err's chain but does not unwrap
// to it, so that nothing can reach and log the unmasked text.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if clean := r.text(text); clean != text {
		return &redactedError{text: clean, err: err}
	}
	return err
}

type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string        { return e.text }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

package sink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestRedactURLs(t *testing.T) {
	for _, c := range []struct {
		in, want string
		secrets  []string // must not appear in the output
	}{
		{"nats://TOKEN@h:4222", "nats://xxxxx@h:4222", []string{"TOKEN"}},
		{"nats://u:p4ss@h", "nats://u:xxxxx@h", []string{"p4ss"}},
		{"nats://u:@h:4222", "nats://u:xxxxx@h:4222", nil},
		{"nats://:p4ss@h:4222", "nats://:xxxxx@h:4222", []string{"p4ss"}},
		{"nats://h:4222", "nats://h:4222", nil},
		{"TOKEN@h:4222", "nats://xxxxx@h:4222", []string{"TOKEN"}}, // nats.go reads it as nats://
		{"h:4222", "nats://h:4222", nil},
		{"nats://s%40cr%2Ft@h", "nats://xxxxx@h", []string{"s%40cr%2Ft", "s@cr/t"}},
		{"nats://u:p%40ss@h", "nats://u:xxxxx@h", []string{"p%40ss", "p@ss"}},
		{"tls://u:S3CRET@h:4443", "tls://u:xxxxx@h:4443", []string{"S3CRET"}},
		{"tls://TOKEN@h:4443", "tls://xxxxx@h:4443", []string{"TOKEN"}},
		{"ws://TOKEN@h:8080", "ws://xxxxx@h:8080", []string{"TOKEN"}},
		{"wss://u:S3CRET@h/nats", "wss://u:xxxxx@h/nats", []string{"S3CRET"}},
		{"nats://a:PW1@h1:4222, nats://TOKEN2@h2:4222,tls://h3:4222", "nats://a:xxxxx@h1:4222,nats://xxxxx@h2:4222,tls://h3:4222", []string{"PW1", "TOKEN2"}},
		{"nats://SEC RET@h:4222", "(unparseable URL)", []string{"SEC"}},
		{"nats://TOKEN@h:4222/%zz", "(unparseable URL)", []string{"TOKEN"}},
		{"nats://TOKEN@h:port", "(unparseable URL)", []string{"TOKEN"}},
		{"nats://TOKEN@h:4222,nats://x y@h", "nats://xxxxx@h:4222,(unparseable URL)", []string{"TOKEN", "x y"}},
		{"", "", nil},
	} {
		got := RedactURLs(c.in)
		if got != c.want {
			t.Errorf("RedactURLs(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, s := range c.secrets {
			if strings.Contains(got, s) {
				t.Errorf("RedactURLs(%q) = %q shows %q", c.in, got, s)
			}
		}
	}
}

// Errors can show a URL quoted (url.Parse), re-encoded (url.URL.String) or
// a secret decoded; the redactor masks each.
func TestRedactorMasksErrorText(t *testing.T) {
	list := "nats://a:P%40SS@h1:4222, nats://TOK\tEN@h2:4222"
	r := newRedactor(list)
	_, parseErr := url.Parse(strings.TrimSpace(strings.Split(list, ",")[1]))
	if parseErr == nil {
		t.Fatal("url.Parse accepted a control character")
	}
	for _, err := range []error{
		parseErr,
		fmt.Errorf("sink: connecting to nats://a:P%%40SS@h1:4222: %w", nats.ErrNoServers),
		errors.New("password P@SS refused"),
		errors.New("user-info a:P%40SS refused"),
	} {
		got := r.err(err)
		for _, s := range []string{"P@SS", "P%40SS", "TOK"} {
			if strings.Contains(got.Error(), s) {
				t.Errorf("%q shows %q", got, s)
			}
		}
		if !errors.Is(got, err) {
			t.Errorf("%q does not match the error it masks", got)
		}
		var re *redactedError
		if errors.As(got, &re) && errors.Unwrap(got) != nil {
			t.Errorf("%q unwraps to the unmasked error", got)
		}
	}
	clean := errors.New("dial tcp 127.0.0.1:4222: connect: connection refused")
	if got := r.err(clean); got != clean {
		t.Errorf("an error without secrets was replaced by %q", got)
	}
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Connect's log lines and error, for URLs that carry a secret and lead
// nowhere, never show the secret.
func TestConnectKeepsSecretsOutOfLogsAndErrors(t *testing.T) {
	port := closedPort(t)
	for _, c := range []struct{ name, url string }{
		{"token", fmt.Sprintf("nats://SECRETTOKEN@127.0.0.1:%d", port)},
		{"password", fmt.Sprintf("nats://bridge:SECRETPASSWORD@127.0.0.1:%d", port)},
		{"token without scheme", fmt.Sprintf("SECRETTOKEN@127.0.0.1:%d", port)},
		{"list", fmt.Sprintf("nats://127.0.0.1:%d, tls://SECRETTOKEN@127.0.0.1:%d", port, port)},
		{"unparseable", fmt.Sprintf("nats://SECRET TOKEN@127.0.0.1:%d", port)}, // url.Parse's error quotes it
		{"websocket", fmt.Sprintf("ws://SECRETTOKEN@127.0.0.1:%d", port)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, logs := captureLogs(t)
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			nc, err := Connect(ctx, c.url)
			if err == nil {
				nc.Close()
				t.Fatal("connected to a closed port")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the secret: %v", err)
			}
			if len(entries(logs, "Cannot connect to NATS yet; retrying")) == 0 {
				t.Fatalf("no retry logged; log:\n%s", logs.String())
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "SECRET") {
					t.Errorf("log line shows the secret: %s", line)
				}
			}
		})
	}
}

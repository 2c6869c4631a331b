package natstest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// CheckRefusesPlainText fails the test unless the NATS server at addr
// refuses a client that speaks the protocol without TLS, as a client
// without TLS support would (nats.go itself upgrades to TLS when the
// server requires it): the server must announce tls_required and, sent a
// CONNECT with user's valid password and a PING in clear text, close the
// connection without the PONG a served client gets.
func CheckRefusesPlainText(t testing.TB, addr, user, password string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// A bound on a broken server, not an assertion: the server's own TLS
	// timeout closes the connection within seconds.
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, `"tls_required":true`) {
		t.Errorf("%s does not require TLS: %s", addr, info)
	}
	connect, err := json.Marshal(map[string]any{"user": user, "pass": password, "verbose": false})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", connect); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if strings.Contains(string(rest), "PONG") {
		t.Errorf("%s serves a client without TLS: %q", addr, rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s kept a client without TLS connected: %v", addr, err)
	}
}

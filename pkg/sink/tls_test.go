package sink

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testpki"
)

// With mutual TLS required, the server lets in only clients whose
// certificate its CA signed and that is still valid, over TLS; and a
// client verifies the server's name.
func TestTLSMutualRefusals(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "ca")
	srv := startTLSServer(t, dir, ca, true, "nats.internal")
	url := srv.ClientURL()
	good := ca.Issue(t, dir, "client", testpki.Leaf{CommonName: "kubebridge"})
	foreign := testpki.NewCA(t, dir, "other").Issue(t, dir, "foreign", testpki.Leaf{CommonName: "kubebridge"})
	expired := ca.Issue(t, dir, "expired", testpki.Leaf{CommonName: "kubebridge",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	full := Auth{CAFile: ca.File, CertFile: good.CertFile, KeyFile: good.KeyFile}
	withCert := func(p testpki.Pair) Auth { a := full; a.CertFile, a.KeyFile = p.CertFile, p.KeyFile; return a }
	withName := func(name string) Auth { a := full; a.ServerName = name; return a }
	tlsURL := strings.Replace(url, "nats://", "tls://", 1)

	tests := []struct {
		name    string
		url     string
		auth    Auth
		wantErr string // "" to connect
	}{
		{"CA and client certificate", url, full, ""},
		{"a server name the server's certificate holds", url, withName("nats.internal"), ""},
		{"no client certificate", url, Auth{CAFile: ca.File}, "tls"},
		{"a certificate another CA signed", url, withCert(foreign), "tls"},
		{"an expired certificate", url, withCert(expired), "tls"},
		{"a wrong server name", url, withName("wrong.example"), "not wrong.example"},
		{"tls:// without a CA: the system's roots", tlsURL, Auth{CertFile: good.CertFile, KeyFile: good.KeyFile}, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := connectOnce(t, tt.url, tt.auth)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Error("connected")
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q does not say %q", err, tt.wantErr)
			}
		})
	}
}

// A client given any TLS setting never talks to a server without TLS:
// nothing, credentials included, goes out in clear text.
func TestTLSClientRefusesAPlainServer(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "ca")
	good := ca.Issue(t, dir, "client", testpki.Leaf{CommonName: "kubebridge"})
	url := natstest.Server(t, server.Options{}).ClientURL()
	for name, a := range map[string]Auth{
		"CA":          {CAFile: ca.File},
		"certificate": {CertFile: good.CertFile, KeyFile: good.KeyFile},
		"server name": {ServerName: "nats.internal"},
	} {
		t.Run(name, func(t *testing.T) {
			err := connectOnce(t, url, a)
			if err == nil || !strings.Contains(err.Error(), "secure connection not available") {
				t.Errorf("err = %v, want a refusal to connect without TLS", err)
			}
		})
	}
}

// A client that speaks the protocol in clear text, as a client without
// TLS support would (nats.go itself upgrades to TLS when the server
// requires it), is not served: the server, expecting a TLS handshake,
// closes the connection, and never sends the PONG a served client gets.
func TestTLSServerRefusesPlainText(t *testing.T) {
	dir := t.TempDir()
	srv := startTLSServer(t, dir, testpki.NewCA(t, dir, "ca"), true)
	natstest.CheckRefusesPlainText(t, srv.Addr().String(), "", "")
}

// When several servers are tried and a later one refuses the connection,
// nats.go reports only "no servers available"; Connect's error still says
// why the server that answered was refused (here: its certificate, which
// the configured CA did not sign), as a bridge given a URL list, or a
// cluster advertising addresses it cannot reach, would log it.
func TestConnectSaysWhyNoServerWasAvailable(t *testing.T) {
	dir := t.TempDir()
	srv := startTLSServer(t, dir, testpki.NewCA(t, dir, "ca"), false)
	// A port nothing listens on: connections to it are refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + l.Addr().String()
	l.Close()
	opts, err := Auth{CAFile: testpki.NewCA(t, dir, "other").File}.Options()
	if err != nil {
		t.Fatal(err)
	}
	// In this order, as nats.go may shuffle them: the refusal comes last.
	opts = append(opts, nats.DontRandomize())
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	nc, err := Connect(ctx, srv.ClientURL()+", "+closed, opts...)
	if err == nil {
		nc.Close()
		t.Fatal("connected to a server whose certificate no configured CA signed")
	}
	if !errors.Is(err, nats.ErrNoServers) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("err = %v, want nats.ErrNoServers that says the server's certificate was refused", err)
	}
}

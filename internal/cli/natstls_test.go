package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testpki"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// The CLI reaches a nats-server that requires mutual TLS with the files
// its flags, the bridge's variables under either name, or a nats context
// give, and is refused without them.
func TestConnectOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "ca")
	srvPair := ca.Issue(t, dir, "server", testpki.Leaf{CommonName: "nats", Server: true, DNSNames: []string{"nats.internal"}})
	tlsCfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvPair.CertFile, KeyFile: srvPair.KeyFile, CaFile: ca.File, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	url := natstest.Server(t, server.Options{JetStream: true, TLSConfig: tlsCfg, TLS: true, TLSVerify: true, TLSTimeout: 2}).ClientURL()
	p := ca.Issue(t, dir, "cli", testpki.Leaf{CommonName: "cli"})
	createStream(t, url, sink.Auth{CAFile: ca.File, CertFile: p.CertFile, KeyFile: p.KeyFile})

	home := t.TempDir()
	ctxFile, err := json.Marshal(natsContext{URL: url, CA: ca.File, Cert: p.CertFile, Key: p.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := filepath.Join(home, ".config", "nats", "context")
	if err := os.MkdirAll(ctxDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "tls.json"), ctxFile, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		flags   connFlags
		env     map[string]string
		wantErr string
	}{
		{"flags", connFlags{server: url, tlsCA: ca.File, tlsCert: p.CertFile, tlsKey: p.KeyFile}, nil, ""},
		{"nats CLI variables", connFlags{server: url}, map[string]string{"NATS_CA": ca.File, "NATS_CERT": p.CertFile, "NATS_KEY": p.KeyFile}, ""},
		{"NATS_TLS_ variables and a server name", connFlags{server: url}, map[string]string{"NATS_TLS_CA": ca.File, "NATS_TLS_CERT": p.CertFile, "NATS_TLS_KEY": p.KeyFile, "NATS_TLS_SERVER_NAME": "nats.internal"}, ""},
		{"a nats context", connFlags{context: "tls"}, nil, ""},
		{"a wrong server name", connFlags{context: "tls", tlsServerName: "wrong.example"}, nil, "not wrong.example"},
		// Under TLS 1.3 the server's "certificate required" alert can come
		// after the client's first write failed: a TLS error either way.
		{"no client certificate", connFlags{server: url, tlsCA: ca.File}, nil, "tls"},
		{"two names, two files", connFlags{server: url}, map[string]string{"NATS_CA": ca.File, "NATS_TLS_CA": p.CertFile}, "name different files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			for k, v := range tt.env {
				env[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := tt.flags.connect(ctx, func(k string) string { return env[k] })
			if err == nil {
				c.Close()
			}
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

// createStream creates the stream the CLI looks for.
func createStream(t *testing.T, url string, a sink.Auth) {
	t.Helper()
	opts, err := a.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: consume.DefaultStream, Subjects: []string{"kubebridge.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
}

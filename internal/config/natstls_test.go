package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/testpki"
)

// tlsFiles writes a CA and a client certificate it signed, and returns
// the three files.
func tlsFiles(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	authority := testpki.NewCA(t, dir, "ca")
	p := authority.Issue(t, dir, "client", testpki.Leaf{CommonName: "kubebridge"})
	return authority.File, p.CertFile, p.KeyFile
}

func TestLoadTLSProblems(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := tlsFiles(t, dir)
	other := testpki.NewCA(t, dir, "other").Issue(t, dir, "other", testpki.Leaf{CommonName: "other"})
	expired := testpki.NewCA(t, dir, "ca2").Issue(t, dir, "expired", testpki.Leaf{CommonName: "old",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	const url = "tls://nats.example.com:4222"

	tests := []struct {
		name string
		env  map[string]string
		want []want
	}{
		{"ca missing", env("NATS_URL", url, "NATS_TLS_CA", missing), []want{p("NATS_TLS_CA", missing, "cannot read the file", "no such file")}},
		{"ca without a certificate", env("NATS_URL", url, "NATS_CA", notPEM), []want{p("NATS_CA", notPEM, "holds no PEM certificate")}},
		{"ca is a key", env("NATS_URL", url, "NATS_TLS_CA", key), []want{p("NATS_TLS_CA", key, "holds no PEM certificate")}},
		{"cert without key", env("NATS_URL", url, "NATS_TLS_CERT", cert), []want{p("NATS_TLS_CERT", "NATS_TLS_KEY must be set together")}},
		{"key without cert", env("NATS_URL", url, "NATS_TLS_KEY", key), []want{p("NATS_TLS_CERT", "NATS_TLS_KEY must be set together")}},
		{"cert missing, key unset", env("NATS_URL", url, "NATS_CERT", missing), []want{p("NATS_CERT", "NATS_KEY must be set together"), p("NATS_CERT", missing, "cannot read the file")}},
		{"key unreadable", env("NATS_URL", url, "NATS_CERT", cert, "NATS_TLS_KEY", missing), []want{p("NATS_TLS_KEY", missing, "cannot read the file")}},
		{"key of another certificate", env("NATS_URL", url, "NATS_CERT", cert, "NATS_KEY", other.KeyFile), []want{p("NATS_KEY", other.KeyFile, "is not the key of NATS_CERT="+`"`+cert, "does not match")}},
		{"cert is not a certificate", env("NATS_URL", url, "NATS_CERT", notPEM, "NATS_KEY", key), []want{p("NATS_CERT", notPEM, "holds no PEM certificate")}},
		{"cert is a key", env("NATS_URL", url, "NATS_CERT", key, "NATS_KEY", key), []want{p("NATS_CERT", key, "holds no PEM certificate")}},
		{"expired cert", env("NATS_URL", url, "NATS_TLS_CERT", expired.CertFile, "NATS_TLS_KEY", expired.KeyFile), []want{p("NATS_TLS_CERT", expired.CertFile, "the certificate expired at")}},
		{"two names for the CA, two files", env("NATS_URL", url, "NATS_CA", ca, "NATS_TLS_CA", other.CertFile), []want{p("NATS_TLS_CA", other.CertFile, `NATS_CA="`+ca, "names another file")}},
		{"two names for the cert, two files", env("NATS_URL", url, "NATS_CERT", cert, "NATS_TLS_CERT", other.CertFile, "NATS_KEY", key), []want{p("NATS_TLS_CERT", "names another file")}},
		{"two names for the key, two files", env("NATS_URL", url, "NATS_CERT", cert, "NATS_KEY", key, "NATS_TLS_KEY", other.KeyFile), []want{p("NATS_TLS_KEY", "names another file")}},
		{"server name without url", env("NATS_TLS_SERVER_NAME", "nats"), []want{p("NATS_TLS_SERVER_NAME", "NATS_URL is not")}},
		{"tls names without url", env("NATS_TLS_CA", ca, "NATS_TLS_CERT", cert, "NATS_TLS_KEY", key), []want{p("NATS_TLS_CA", "NATS_URL is not"), p("NATS_TLS_CERT", "NATS_URL is not"), p("NATS_TLS_KEY", "NATS_URL is not")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.env)
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want problems %v", *c, tt.want)
			}
			checkProblems(t, err, tt.want)
		})
	}
}

func TestLoadTLSNames(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := tlsFiles(t, dir)
	const url = "tls://nats.example.com:4222"
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"nats CLI names", env("NATS_URL", url, "NATS_CA", ca, "NATS_CERT", cert, "NATS_KEY", key)},
		{"NATS_TLS_ names", env("NATS_URL", url, "NATS_TLS_CA", ca, "NATS_TLS_CERT", cert, "NATS_TLS_KEY", key)},
		{"mixed names", env("NATS_URL", url, "NATS_TLS_CA", ca, "NATS_CERT", cert, "NATS_TLS_KEY", key)},
		{"both names, same files", env("NATS_URL", url, "NATS_CA", ca, "NATS_TLS_CA", ca, "NATS_CERT", cert, "NATS_TLS_CERT", cert, "NATS_KEY", key, "NATS_TLS_KEY", key)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(tt.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.NATSCA != ca || c.NATSCert != cert || c.NATSKey != key {
				t.Errorf("NATSCA, NATSCert, NATSKey = %q, %q, %q; want %q, %q, %q", c.NATSCA, c.NATSCert, c.NATSKey, ca, cert, key)
			}
		})
	}
	c, err := load(env("NATS_URL", "tls://10.0.0.1:4222", "NATS_TLS_SERVER_NAME", "nats.nats.svc"))
	if err != nil {
		t.Fatal(err)
	}
	if c.NATSTLSServerName != "nats.nats.svc" {
		t.Errorf("NATSTLSServerName = %q", c.NATSTLSServerName)
	}
}

package sink

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testpki"
)

// startTLSServer starts a nats-server whose certificate ca signed (for
// 127.0.0.1, localhost and dnsNames) and that requires TLS of every
// client; with verify, also a client certificate ca signed (mutual TLS).
func startTLSServer(t *testing.T, dir string, ca *testpki.CA, verify bool, dnsNames ...string) *server.Server {
	t.Helper()
	p := ca.Issue(t, dir, "server", testpki.Leaf{CommonName: "nats", Server: true, DNSNames: dnsNames})
	tlsCfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.CertFile, KeyFile: p.KeyFile, CaFile: ca.File, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	return natstest.Server(t, server.Options{TLSConfig: tlsCfg, TLS: true, TLSVerify: verify, TLSTimeout: 2})
}

// peerSubjects are the subjects of the client certificates the server's
// connections presented, in connection order.
func peerSubjects(t *testing.T, s *server.Server) []string {
	t.Helper()
	cz, err := s.Connz(&server.ConnzOptions{Username: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cz.Conns {
		for _, pc := range c.TLSPeerCerts {
			out = append(out, pc.Subject)
		}
	}
	return out
}

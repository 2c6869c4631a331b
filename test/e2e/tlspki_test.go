package e2e

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/internal/testpki"
)

// natsPKI is a test's own CA and the certificates its nats-server
// processes present: peer for both ends of a route or leaf node link
// (mutual TLS), server for the client ports. Clients trust the CA.
type natsPKI struct {
	ca           *testpki.CA
	peer, server testpki.Pair
}

func newNATSPKI(t *testing.T) *natsPKI {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "nats-ca")
	return &natsPKI{ca: ca,
		peer:   ca.Issue(t, dir, "peer", testpki.Leaf{CommonName: "nats-peer", Peer: true}),
		server: ca.Issue(t, dir, "server", testpki.Leaf{CommonName: "nats", Server: true})}
}

// routeTLS is mutual TLS between servers.
func (p *natsPKI) routeTLS() *testenv.TLSFiles {
	return &testenv.TLSFiles{CA: p.ca.File, Cert: p.peer.CertFile, Key: p.peer.KeyFile}
}

// clientTLS is TLS on a client port.
func (p *natsPKI) clientTLS() *testenv.TLSFiles {
	return &testenv.TLSFiles{Cert: p.server.CertFile, Key: p.server.KeyFile}
}

// readerOpts make a test's own connections trust the CA.
func (p *natsPKI) readerOpts() []nats.Option { return []nats.Option{nats.RootCAs(p.ca.File)} }

// bridgeEnv makes a bridge trust the CA.
func (p *natsPKI) bridgeEnv(env map[string]string) map[string]string {
	out := map[string]string{"NATS_CA": p.ca.File}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// tlsURL is u with the tls:// scheme: a client port that serves TLS.
func tlsURL(u string) string {
	_, hostPort, _ := strings.Cut(u, "://")
	return "tls://" + hostPort
}

// requiresTLS reads the INFO a nats-server port sends first and reports
// whether it requires TLS.
func requiresTLS(t *testing.T, addr string) bool {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on a broken server, not an assertion: INFO comes at once.
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	info, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(info, `"tls_required":true`)
}

package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/freeport"
)

// Server starts a nats-server with opts on the local port opts name (a
// free one when they name none), quiet, storing JetStream (when enabled)
// in a temporary directory unless opts name one, and shuts it down when
// the test ends.
func Server(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.NoSigs, opts.NoLog = "127.0.0.1", true, true
	if opts.Port == 0 {
		opts.Port = -1
	}
	if opts.JetStream && opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	// Shut down even when it never gets ready.
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

// Connect connects to url, reconnecting for as long as the test runs (a
// test may restart the server), and closes the connection when it ends.
func Connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream connects to url as Connect does and returns the connection
// with its JetStream context.
func JetStream(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := Connect(t, url)
	return nc, JetStreamOf(t, nc)
}

// JetStreamOf is the JetStream context of nc, a connection made some other
// way (as the bridge makes it, say).
func JetStreamOf(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// FreePort is a local port nothing listens on right now, below the
// kernel's ephemeral range, for a server that must come back on the same
// port after a restart.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := freeport.Pick(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

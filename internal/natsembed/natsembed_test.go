package natsembed

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/kubebridge/kubebridge/internal/freeport"
)

// A taken port: Start says so with the bind error, and the test process,
// which nats-server's own logger would have ended, goes on.
func TestStartOnATakenPortSaysWhy(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s, err := Start(taken.Addr().String(), t.TempDir())
	if err == nil {
		s.Shutdown()
		t.Fatal("Start succeeded on a port another listener holds")
	}
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start: %v; want ErrNotReady with the bind error", err)
	}
}

// A free port: a server that accepts connections, with JetStream.
func TestStart(t *testing.T) {
	ports, err := freeport.Pick(1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !s.JetStreamEnabled() {
		t.Error("JetStream is not enabled")
	}
}

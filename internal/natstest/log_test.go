package natstest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A server whose port is taken logs that it gives up and does not start;
// the test process goes on, and Fatal says why.
func TestServerLogKeepsWhatWouldEndTheProcess(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: taken.Addr().(*net.TCPAddr).Port, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nats.log")
	log := LogToFile(s, path)
	s.Start()
	defer s.Shutdown()
	if s.ReadyForConnections(time.Second) {
		t.Fatal("the server is ready on a port another listener holds")
	}
	err = log.Fatal()
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Fatal() = %v, want the bind error", err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "address already in use") {
		t.Errorf("the log file does not say it:\n%s", b)
	}
}

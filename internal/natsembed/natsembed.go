package natsembed

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrNotReady is returned when the server does not accept connections in time.
var ErrNotReady = errors.New("natsembed: server not ready")

// Start runs a NATS server with JetStream on listen (host:port), storing
// streams under storeDir.
func Start(listen, storeDir string) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("natsembed: listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("natsembed: listen port %q: %w", portStr, err)
	}
	s, err := server.NewServer(&server.Options{
		ServerName: "kubebridge-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	log := &KeepFatal{}
	s.SetLoggerV2(log, false, false, false)
	s.Start()
	if err := WaitReady(s, log, readyTimeout); err != nil {
		s.Shutdown()
		return nil, fmt.Errorf("%w on %s: %w", ErrNotReady, listen, err)
	}
	return s, nil
}

// readyTimeout bounds how long Start waits for the server.
const readyTimeout = 10 * time.Second

// WaitReady waits until s accepts connections, returning the error it gave
// up with (see KeepFatal) as soon as it logs one, or an error once timeout
// has passed.
func WaitReady(s *server.Server, log *KeepFatal, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; {
		if s.ReadyForConnections(100 * time.Millisecond) {
			return nil
		}
		if err := log.Fatal(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after %v", timeout)
		}
	}
}

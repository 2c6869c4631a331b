// Package natsembed owns the NATS server the bridge starts in-process when
// no NATS_URL is configured, so that a first run needs nothing else.
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
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("%w: nothing listening on %s after 10s (is the port taken?)", ErrNotReady, listen)
	}
	return s, nil
}

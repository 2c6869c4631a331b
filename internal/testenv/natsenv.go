package testenv

import (
	"errors"
	"fmt"
	"net"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebridge/kubebridge/internal/natsembed"
	"github.com/kubebridge/kubebridge/internal/natstest"
)

// NATSURL is nats://127.0.0.1:<port>. It stays the same across restarts.
func (e *Env) NATSURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("nats://%s", hostPort(e.natsOpts.Port))
}

// NATSServer returns the running in-process server, or nil if stopped.
func (e *Env) NATSServer() *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nats
}

// StartNATS starts the in-process NATS server on the same port and
// JetStream store dir as before, so clients reconnect and persisted
// streams survive. mods, if any, change the server options for this and
// all later starts (e.g. func(o *server.Options) { o.MaxPayload = 1024 }).
// It fails if NATS is already running.
func (e *Env) StartNATS(mods ...func(*server.Options)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkOpen(); err != nil {
		return err
	}
	if e.nats != nil {
		return errors.New("testenv: NATS is already running")
	}
	for _, mod := range mods {
		mod(e.natsOpts)
	}
	// NewServer fills in defaults on the Options it is given; keep the
	// template pristine.
	s, err := server.NewServer(e.natsOpts.Clone())
	if err != nil {
		return fmt.Errorf("testenv: nats: %w", err)
	}
	// Not ConfigureLogger: its logger ends the process on a fatal error,
	// such as a restart finding the port taken.
	log := natstest.LogToFile(s, e.natsOpts.LogFile)
	s.Start()
	if err := natsembed.WaitReady(s, log.KeepFatal, natsReadyTimeout); err != nil {
		s.Shutdown()
		s.WaitForShutdown()
		return fmt.Errorf("testenv: nats: %w; log %s:\n%s", err, e.natsOpts.LogFile, tail(e.natsOpts.LogFile, 30))
	}
	if e.natsOpts.Port <= 0 {
		// Pin the randomly chosen port for restarts.
		e.natsOpts.Port = s.Addr().(*net.TCPAddr).Port
	}
	e.nats = s
	return nil
}

// StopNATS shuts the NATS server down and waits for it to finish, which
// disconnects all clients. It is a no-op if NATS is not running.
func (e *Env) StopNATS() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopNATSLocked()
}

// RestartNATS is StopNATS followed by StartNATS(mods...).
func (e *Env) RestartNATS(mods ...func(*server.Options)) error {
	e.StopNATS()
	return e.StartNATS(mods...)
}

func (e *Env) stopNATSLocked() {
	if e.nats == nil {
		return
	}
	e.nats.Shutdown()
	e.nats.WaitForShutdown()
	e.nats = nil
}

// repickNATSPort chooses a new port for a first start of NATS that failed
// to bind.
func (e *Env) repickNATSPort() error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.natsOpts.Port = ports[0]
	e.mu.Unlock()
	return nil
}

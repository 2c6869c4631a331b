package natsembed

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// KeepFatal is a nats-server Logger for a server run in-process. Where the
// server gives up (a port it cannot bind, a JetStream store it cannot
// open) it logs a fatal error, and nats-server's own loggers then call
// os.Exit(1), ending the process that embeds it without that process's own
// shutdown or a word of its own. KeepFatal logs it to Logger as an error
// and keeps the first one for Fatal. Logger may be nil: nothing else is
// logged.
type KeepFatal struct {
	Logger server.Logger

	mu    sync.Mutex
	fatal error
}

var _ server.Logger = (*KeepFatal)(nil)

// Fatal returns the first fatal error logged, or nil. A server that
// logged one did not start, or stopped serving what failed.
func (k *KeepFatal) Fatal() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fatal
}

// Fatalf logs a fatal error and keeps the first one.
func (k *KeepFatal) Fatalf(format string, v ...any) {
	k.Errorf("fatal: "+format, v...)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fatal == nil {
		k.fatal = fmt.Errorf("nats-server gave up: "+format, v...)
	}
}

func (k *KeepFatal) Noticef(format string, v ...any) {
	if k.Logger != nil {
		k.Logger.Noticef(format, v...)
	}
}

func (k *KeepFatal) Warnf(format string, v ...any) {
	if k.Logger != nil {
		k.Logger.Warnf(format, v...)
	}
}

func (k *KeepFatal) Errorf(format string, v ...any) {
	if k.Logger != nil {
		k.Logger.Errorf(format, v...)
	}
}

func (k *KeepFatal) Debugf(format string, v ...any) {
	if k.Logger != nil {
		k.Logger.Debugf(format, v...)
	}
}

func (k *KeepFatal) Tracef(format string, v ...any) {
	if k.Logger != nil {
		k.Logger.Tracef(format, v...)
	}
}

package natstest

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats-server/v2/logger"
	"github.com/nats-io/nats-server/v2/server"
)

// ServerLog is an in-process server's log file. Unlike nats-server's own
// file logger, a fatal error does not end the process: nats-server logs
// one where it gives up (a port it cannot bind, a JetStream store it
// cannot open), and its logger would then call os.Exit(1), ending the
// whole test binary without a word on the test's output. ServerLog writes
// it to the file and keeps it for Fatal.
type ServerLog struct {
	*logger.Logger
	Path string

	mu    sync.Mutex
	fatal error
}

// LogToFile makes s log to the file at path (with times, without debug
// or trace), as Options.LogFile and ConfigureLogger would. Call it after
// server.NewServer and before Start.
func LogToFile(s *server.Server, path string) *ServerLog {
	l := &ServerLog{Logger: logger.NewFileLogger(path, true, false, false, true), Path: path}
	s.SetLoggerV2(l, false, false, false)
	return l
}

// Fatalf logs a fatal error and keeps the first one.
func (l *ServerLog) Fatalf(format string, v ...any) {
	l.Errorf("fatal: "+format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == nil {
		l.fatal = fmt.Errorf("nats-server gave up: "+format, v...)
	}
}

// Fatal returns the first fatal error logged, or nil. A server that
// logged one did not start, or stopped serving what failed.
func (l *ServerLog) Fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

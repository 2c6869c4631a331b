package natstest

import (
	"github.com/nats-io/nats-server/v2/logger"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebridge/kubebridge/internal/natsembed"
)

// ServerLog is an in-process server's log file that keeps a fatal error
// instead of ending the test binary (see natsembed.KeepFatal): a port
// taken meanwhile would otherwise end every test of the package with
// exit status 1 and not a word on the test's output.
type ServerLog struct {
	*natsembed.KeepFatal
	Path string
}

// LogToFile makes s log to the file at path (with times, without debug
// or trace), as Options.LogFile and ConfigureLogger would. Call it after
// server.NewServer and before Start.
func LogToFile(s *server.Server, path string) *ServerLog {
	l := &ServerLog{KeepFatal: &natsembed.KeepFatal{Logger: logger.NewFileLogger(path, true, false, false, true)}, Path: path}
	s.SetLoggerV2(l, false, false, false)
	return l
}

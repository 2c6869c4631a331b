package benchkit

import (
	"io"
	"os/exec"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnectJetStream connects to the NATS server at url; the function it
// returns closes the connection.
func ConnectJetStream(url string, opts ...nats.Option) (jetstream.JetStream, func(), error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

// StartPiped starts cmd, a benchmark's child process, with a pipe to its
// stdin and one from its stdout: the parent's orders go one way, the
// child's measurements the other.
func StartPiped(cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser, err error) {
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

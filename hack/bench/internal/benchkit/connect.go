package benchkit

import (
	"io"
	"os"
	"os/exec"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/natsembed"
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

// StartJetStream starts the NATS server the bridge embeds, on any free
// port with its store in a new temporary directory, and connects to it
// with opts. The function it returns closes the connection, shuts the
// server down and removes the store.
func StartJetStream(opts ...jetstream.JetStreamOpt) (jetstream.JetStream, func(), error) {
	dir, err := os.MkdirTemp("", "benchkit-nats-")
	if err != nil {
		return nil, nil, err
	}
	// A temporary store: what is left behind is only disk.
	removeDir := func() { _ = os.RemoveAll(dir) }
	ns, err := natsembed.Start("127.0.0.1:-1", dir)
	if err != nil {
		removeDir()
		return nil, nil, err
	}
	stop := func() { ns.Shutdown(); removeDir() }
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		stop()
		return nil, nil, err
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		stop()
		return nil, nil, err
	}
	return js, func() { nc.Close(); stop() }, nil
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

package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/freeport"
)

// process is one run of a child binary. Its stdout and stderr are appended
// to logPath, which survives restarts.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	err     error         // Wait's result, valid after done is closed
}

// startProcess starts bin with args, appending its output to logPath. The
// child is killed if the test process dies (see sysProcAttr).
func startProcess(name, bin, logPath string, args []string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // the child keeps its own copy of the descriptor
	fmt.Fprintf(f, "\n==== testenv: %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	waited, err := StartLocked(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = <-waited
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has terminated.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be reaped. It is a no-op
// on a nil or already exited process.
func (p *process) kill() {
	if p == nil {
		return
	}
	if !p.exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// exitError describes an unexpected exit, including the tail of the log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); log %s:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 30))
}

// waitFor polls check every 50ms until it returns nil, the process
// exits, or ctx is done (the caller's deadline bounds the wait).
func (p *process) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if last = check(cctx); last == nil {
			return true, nil
		}
		if p.exited() {
			return false, p.exitError()
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("waiting for %s %s: %w (last error: %v); log %s:\n%s",
			p.name, what, ctx.Err(), last, p.logPath, tail(p.logPath, 30))
	}
	return err
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	b = bytes.Trim(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + string(bytes.Join(lines, []byte("\n    ")))
}

// freePorts returns n distinct ports nothing listens on, below the
// kernel's ephemeral range: a killed child started again binds its old
// ports, which an outgoing connection could otherwise have taken.
func freePorts(n int) ([]int, error) { return freeport.Pick(n) }

func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

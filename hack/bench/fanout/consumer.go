package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
)

// consumer is a running consumer child, as the parent sees it.
type consumer struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// events carries the child's JSON lines; it is closed once the child
	// has exited. seen keeps the lines read while waiting for another.
	events chan childEvent
	seen   map[string]childEvent
	// readErr is the first line that was not JSON, and exitErr the
	// child's exit; both valid once events is closed.
	readErr, exitErr error
}

// startConsumer starts a consumer child of source for the setup whose
// marker token is marker.
func (b *bench) startConsumer(name, source, marker string) (*consumer, error) {
	args := []string{"child", source, "-kubeconfig", b.env.KubeconfigPath(), "-nats", b.nats.ClientURL, "-marker", marker, "-bootstrap", b.o.bootstrap}
	if b.o.heapProfiles != "" {
		file := marker + "-" + strings.ReplaceAll(name, " ", "-") + "-" + source + ".pprof"
		args = append(args, "-heapprofile", filepath.Join(b.o.heapProfiles, file))
	}
	cmd := exec.Command(b.self, args...)
	cmd.Stderr, cmd.SysProcAttr = os.Stderr, childAttr()
	stdin, stdout, err := benchkit.StartPiped(cmd)
	if err != nil {
		return nil, err
	}
	c := &consumer{name: name, cmd: cmd, stdin: stdin, events: make(chan childEvent, 4), seen: map[string]childEvent{}}
	go c.read(stdout)
	return c, nil
}

// read passes the child's lines on until its stdout ends, then waits for
// it to exit (Wait closes the pipe: it comes after the last read).
func (c *consumer) read(stdout io.Reader) {
	defer close(c.events)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		var ev childEvent
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			if c.readErr == nil {
				c.readErr = fmt.Errorf("%s said %q: %w", c.name, lines.Text(), err)
			}
			continue
		}
		c.events <- ev
	}
	if c.readErr == nil {
		c.readErr = lines.Err()
	}
	c.exitErr = c.cmd.Wait()
}

// await waits up to timeout for the child's line of kind event.
func (c *consumer) await(ctx context.Context, event string, timeout time.Duration) (childEvent, error) {
	if ev, ok := c.seen[event]; ok {
		delete(c.seen, event)
		return ev, nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return ev, fmt.Errorf("%s ended before it said %s (exit: %v, output: %v)", c.name, event, c.exitErr, c.readErr)
			}
			if ev.Event == event {
				return ev, nil
			}
			c.seen[ev.Event] = ev
		case <-deadline.C:
			return childEvent{}, fmt.Errorf("%s did not say %s within %v", c.name, event, timeout)
		case <-ctx.Done():
			return childEvent{}, ctx.Err()
		}
	}
}

// state asks the child what its cache holds.
func (c *consumer) state(ctx context.Context) (state, error) {
	if _, err := io.WriteString(c.stdin, "state\n"); err != nil {
		return state{}, fmt.Errorf("%s: %w", c.name, err)
	}
	ev, err := c.await(ctx, "state", time.Minute)
	return state{Objects: ev.Objects, Digest: ev.Digest}, err
}

// stop closes the child's stdin, which ends it, and waits for it: an
// exit status other than 0, or output that is not JSON, is an error.
func (c *consumer) stop() error {
	_ = c.stdin.Close() // a child that is gone already reports through its exit
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-c.events:
			if !ok {
				if err := errors.Join(c.exitErr, c.readErr); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				return nil
			}
		case <-timeout:
			_ = c.cmd.Process.Kill()
			for range c.events {
			}
			return fmt.Errorf("%s did not end within 30s of its stdin closing", c.name)
		}
	}
}

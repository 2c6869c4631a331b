package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// podNet is a pod's network namespace, seen from the test process: it
// listens and dials in there from a thread that entered it.
type podNet struct {
	ns *os.File // /proc/<pid>/ns/net of the pod's first process

	mu     sync.Mutex
	closed bool
	open   []io.Closer // listeners and forwarded connections
}

func openPodNet(pid int) (*podNet, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, err
	}
	return &podNet{ns: f}, nil
}

// in runs fn on a new OS thread that has entered the pod's network
// namespace. The thread is never unlocked: it ends with the goroutine, so
// no other goroutine ever runs in the pod's network. Sockets made by fn
// stay in the pod's network wherever they are used later.
func (n *podNet) in(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(n.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- os.NewSyscallError("setns", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// dial connects to addr inside the pod's network, as the kubelet's probes
// reach the pod IP.
func (n *podNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.in(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// forward listens on addr inside the pod's network and forwards every
// connection to an address outside it that target picks, as kube-proxy
// forwards a Service's cluster IP and port to one of its endpoints.
func (n *podNet) forward(addr string, target func() string) error {
	var l net.Listener
	if err := n.in(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return err
	}
	if !n.track(l) {
		return errors.New("pod network closed")
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go n.pipe(c, target())
		}
	}()
	return nil
}

func (n *podNet) pipe(c net.Conn, target string) {
	u, err := net.Dial("tcp", target)
	if err != nil || !n.track(c) || !n.track(u) {
		c.Close()
		if u != nil {
			u.Close()
		}
		return
	}
	go func() {
		_, _ = io.Copy(u, c)
		u.Close()
	}()
	_, _ = io.Copy(c, u)
	c.Close()
}

func (n *podNet) track(c io.Closer) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.open = append(n.open, c)
	return true
}

// close ends every listener and forwarded connection and lets the
// namespace go.
func (n *podNet) close() {
	n.mu.Lock()
	open := n.open
	n.open, n.closed = nil, true
	n.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
	n.ns.Close()
}

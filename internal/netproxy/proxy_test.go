package netproxy_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/netproxy"
)

// ioTimeout bounds every read and write of the tests, so that a proxy
// that loses bytes fails the test instead of hanging it.
const ioTimeout = 10 * time.Second

// serve runs a TCP server on 127.0.0.1 that handles each connection with
// handle, until the test ends.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echo sends back every byte it reads.
func echo(c net.Conn) { _, _ = io.Copy(c, c) }

func startProxy(t *testing.T, target string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads as many bytes back.
func roundTrip(c net.Conn, msg string) (string, error) {
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	got := make([]byte, len(msg))
	_, err := io.ReadFull(c, got)
	return string(got), err
}

func mustRoundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if got, err := roundTrip(c, msg); err != nil || got != msg {
		t.Fatalf("round trip of %q: got %q, %v", msg, got, err)
	}
}

// nothingWithin checks that c reads nothing for d: what a held link
// shows. A link that does not hold shows the bytes at once.
func nothingWithin(t *testing.T, c net.Conn, d time.Duration, what string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.Read(b[:])
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d bytes (%v), want nothing while paused", what, n, err)
	}
}

// readsEnd checks that the connection ends: the proxy closed it.
func readsEnd(t *testing.T, c net.Conn, what string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.Read(b[:])
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d bytes (%v), want the connection closed", what, n, err)
	}
}

func TestForwardsBothWays(t *testing.T) {
	p := startProxy(t, serve(t, echo))
	c := dial(t, p.Addr())
	mustRoundTrip(t, c, "hello")
	mustRoundTrip(t, c, "again")
}

// Pause holds the bytes of the connections open and of new ones, which
// stay open; Resume delivers them.
func TestPauseHoldsResumeDelivers(t *testing.T) {
	p := startProxy(t, serve(t, echo))
	open := dial(t, p.Addr())
	mustRoundTrip(t, open, "before")

	p.Pause()
	if _, err := open.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	accepted := dial(t, p.Addr())
	if _, err := accepted.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	nothingWithin(t, open, 300*time.Millisecond, "open connection")
	nothingWithin(t, accepted, 100*time.Millisecond, "connection accepted while paused")

	p.Resume()
	for c, want := range map[net.Conn]string{open: "held", accepted: "queued"} {
		if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("after Resume: got %q, %v; want %q", got, err, want)
		}
	}
	mustRoundTrip(t, open, "after")
}

// Cut closes every connection and every new one until Restore.
func TestCutClosesAndRefusesRestoreAccepts(t *testing.T) {
	p := startProxy(t, serve(t, echo))
	open := dial(t, p.Addr())
	mustRoundTrip(t, open, "before")
	p.Pause()
	pending := dial(t, p.Addr()) // accepted, not yet dialed on

	p.Cut()
	readsEnd(t, open, "connection open at the cut")
	readsEnd(t, pending, "connection accepted while paused, at the cut")
	p.Resume()
	readsEnd(t, dial(t, p.Addr()), "connection made while cut")

	p.Restore()
	mustRoundTrip(t, dial(t, p.Addr()), "restored")
}

// Every chunk arrives at least the latency after it was sent, each way,
// and the bytes keep their order over many chunks.
func TestLatencyDelaysInOrder(t *testing.T) {
	const (
		latency = 50 * time.Millisecond
		msgs    = 400
	)
	p := startProxy(t, serve(t, echo))
	p.SetLatency(latency)
	c := dial(t, p.Addr())
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}

	sent := make([]time.Time, msgs)
	writeErr := make(chan error, 1)
	go func() {
		var b [8]byte
		for i := range msgs {
			binary.BigEndian.PutUint64(b[:], uint64(i))
			sent[i] = time.Now()
			if _, err := c.Write(b[:]); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	var b [8]byte
	for i := range msgs {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		got := binary.BigEndian.Uint64(b[:])
		if got != uint64(i) {
			t.Fatalf("message %d came back as %d: out of order", i, got)
		}
		// sent[i] was written before the bytes of message i, which are
		// back: the writer's store happened before.
		if took := time.Since(sent[i]); took < 2*latency {
			t.Fatalf("message %d came back %v after it was sent, want at least %v (the latency each way)", i, took, 2*latency)
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}

	p.SetLatency(0)
	mustRoundTrip(t, c, "undelayed")
}

// Retarget sends the new connections elsewhere and leaves the open ones.
func TestRetarget(t *testing.T) {
	greet := func(name string) func(net.Conn) {
		return func(c net.Conn) { _, _ = c.Write([]byte(name)); echo(c) }
	}
	p := startProxy(t, serve(t, greet("a")))
	first := dial(t, p.Addr())
	greeted(t, first, "a")
	p.Retarget(serve(t, greet("b")))
	greeted(t, dial(t, p.Addr()), "b")
	mustRoundTrip(t, first, "still a's")
}

func greeted(t *testing.T, c net.Conn, want string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(want))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != want {
		t.Fatalf("greeted by %q (%v), want %q", b, err, want)
	}
}

// Close ends every connection, even held ones, and returns once the
// proxy's goroutines have ended.
func TestCloseEndsHeldConnections(t *testing.T) {
	p, err := netproxy.New(serve(t, echo))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	mustRoundTrip(t, c, "before")
	p.Pause()
	if _, err := c.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	readsEnd(t, c, "held connection at Close")
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("the proxy accepts connections after Close")
	}
	p.Close() // twice is fine
}

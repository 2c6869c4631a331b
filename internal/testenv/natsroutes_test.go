package testenv

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestDeadEndRefuses(t *testing.T) {
	d, err := newDeadEnd()
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	for range 3 {
		c, err := net.Dial("tcp", d.addr)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s (a dead end) succeeded", d.addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", d.addr, err)
		}
	}
	if ln, err := net.Listen("tcp", d.addr); err == nil {
		ln.Close()
		t.Fatalf("a dead end's port %s can be listened on", d.addr)
	}
}

// A link is up while neither of its nodes is partitioned.
func TestRouteMeshPartitionHeal(t *testing.T) {
	var nodes []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
			}
		}()
		nodes = append(nodes, ln.Addr().String())
	}
	m, err := newRouteMesh(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	check := func(step string, up func(i, j int) bool) {
		t.Helper()
		for i := range nodes {
			for j := range nodes {
				if i != j {
					if got, want := linkUp(t, m, i, j), up(i, j); got != want {
						t.Errorf("%s: link n%d->n%d up %v, want %v", step, i, j, got, want)
					}
				}
			}
		}
	}
	check("start", func(i, j int) bool { return true })
	m.partition(0)
	m.partition(2)
	check("n0, n2 partitioned", func(i, j int) bool { return false })
	m.heal(2)
	check("n2 healed", func(i, j int) bool { return i != 0 && j != 0 })
	m.heal(0)
	check("n0 healed", func(i, j int) bool { return true })
}

// linkUp reports whether node i's route to node j carries a byte there
// and back; a cut link closes the connection at once.
func linkUp(t *testing.T, m *routeMesh, i, j int) bool {
	t.Helper()
	c, err := net.Dial("tcp", m.links[i][j].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return false
	}
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

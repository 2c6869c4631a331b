package testenv

import (
	"fmt"
	"net"
	"sync"

	"github.com/kubebridge/kubebridge/internal/netproxy"
)

// routeMesh is the routes of a NATS cluster that can be partitioned: each
// node reaches each other one through a proxy of its own, links[i][j]
// (node i's route to node j), so that cutting a node's links cuts it off
// from its peers and from nothing else.
//
// The nodes would otherwise route around the proxies: a node tells its
// peers of every new peer it routes with, at that peer's advertised
// cluster address (its listen address by default), and a peer not yet
// routed with it connects there (an implicit route; nats-server's
// processImplicitRoute). So each node advertises a dead end, a port that
// refuses connections: such an implicit route fails at once and is not
// tried again, and the configured routes, through the proxies, make the
// full mesh.
type routeMesh struct {
	links    [][]*netproxy.Proxy // nil where i == j
	deadEnds []*deadEnd          // per node, the cluster address it advertises
	mu       sync.Mutex
	cutOff   []bool // per node, partitioned
}

// newRouteMesh starts the proxies between every two of the nodes whose
// cluster listen addresses are clusterAddrs.
func newRouteMesh(clusterAddrs []string) (*routeMesh, error) {
	n := len(clusterAddrs)
	m := &routeMesh{links: make([][]*netproxy.Proxy, n), cutOff: make([]bool, n)}
	for i := range n {
		m.links[i] = make([]*netproxy.Proxy, n)
		for j := range n {
			if i == j {
				continue
			}
			p, err := netproxy.New(clusterAddrs[j])
			if err != nil {
				m.close()
				return nil, err
			}
			m.links[i][j] = p
		}
		d, err := newDeadEnd()
		if err != nil {
			m.close()
			return nil, err
		}
		m.deadEnds = append(m.deadEnds, d)
	}
	return m, nil
}

// routesOf is node i's configured routes: through its links.
func (m *routeMesh) routesOf(i int) []string {
	var routes []string
	for j, p := range m.links[i] {
		if j != i {
			routes = append(routes, "nats-route://"+p.Addr())
		}
	}
	return routes
}

// advertised is the cluster address node i tells its peers: a dead end.
func (m *routeMesh) advertised(i int) string { return m.deadEnds[i].addr }

// partition cuts every link to and from node i.
func (m *routeMesh) partition(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cutOff[i] = true
	for j := range m.links {
		if j != i {
			m.links[i][j].Cut()
			m.links[j][i].Cut()
		}
	}
}

// heal restores the links of node i to every node not partitioned.
func (m *routeMesh) heal(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cutOff[i] = false
	for j := range m.links {
		if j != i && !m.cutOff[j] {
			m.links[i][j].Restore()
			m.links[j][i].Restore()
		}
	}
}

func (m *routeMesh) close() {
	for _, row := range m.links {
		for _, p := range row {
			if p != nil {
				p.Close()
			}
		}
	}
	for _, d := range m.deadEnds {
		d.close()
	}
}

// deadEnd is a loopback port that refuses every connection for as long
// as it is open, and that no one else can bind meanwhile: the local end
// of a loopback connection kept open, which holds the port while nothing
// listens on it. (A port merely left unbound could be taken by another
// server later.)
type deadEnd struct {
	addr    string
	out, in net.Conn
}

func newDeadEnd() (*deadEnd, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer func() { _ = ln.Close() }() // the connection outlives it
	out, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	in, err := ln.Accept()
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("testenv: dead end: %w", err)
	}
	return &deadEnd{addr: out.LocalAddr().String(), out: out, in: in}, nil
}

func (d *deadEnd) close() {
	_ = d.out.Close()
	_ = d.in.Close()
}

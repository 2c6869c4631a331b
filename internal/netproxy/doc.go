// Package netproxy is a TCP proxy that tests put between a client and a
// server to play the network's faults on that one link: hold every byte
// (Pause), take the link down (Cut), or deliver every byte later
// (SetLatency), while the client's other connections keep working.
//
// It owns the proxy's listener, the connections it forwards and the
// bytes in flight between them.
//
// Tests only. It imports nothing of this module.
package netproxy

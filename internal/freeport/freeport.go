package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// span is how many ports below the ephemeral range Pick chooses from.
const span = 12000

// fallbackLow is the ephemeral range's first port where the kernel does
// not say (Linux's default).
const fallbackLow = 32768

// Pick returns n distinct ports that nothing on 127.0.0.1 listens on
// right now, chosen at random below the ephemeral range. Every port is
// held by a listener until all n are found, so none is returned twice.
// Another process can still bind one before its server does; only the
// kernel's own choices for outgoing connections are ruled out.
func Pick(n int) ([]int, error) {
	hi := ephemeralLow(readRange()) - 1
	lo := max(hi-span, 1024)
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			// Released for the caller's servers to bind: a listener that
			// fails to close leaves nothing to undo here.
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("freeport: no %d free ports in %d-%d after %d tries", n, lo, hi, tries)
		}
		port := lo + rand.IntN(hi-lo+1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		held = append(held, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// readRange is the kernel's ephemeral port range, "low high", or "" where
// it cannot be read.
func readRange() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ""
	}
	return string(b)
}

// ephemeralLow is the first port of the range text names, or fallbackLow.
func ephemeralLow(text string) int {
	fields := strings.Fields(text)
	if len(fields) != 2 {
		return fallbackLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 1024+span/4 {
		return fallbackLow
	}
	return low
}

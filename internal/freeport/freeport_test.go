package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Ports are distinct, bindable, and below the kernel's ephemeral range.
func TestPickIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow(readRange())
	ports, err := Pick(30)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= low || p < 1024 {
			t.Errorf("port %d is outside 1024-%d", p, low-1)
		}
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestEphemeralLow(t *testing.T) {
	for text, want := range map[string]int{
		"32768\t60999\n": 32768,
		"49152 65535":    49152,
		"":               fallbackLow,
		"garbage":        fallbackLow,
		"1025 65535":     fallbackLow, // leaves no room below it
	} {
		if got := ephemeralLow(text); got != want {
			t.Errorf("ephemeralLow(%q) = %d, want %d", text, got, want)
		}
	}
}

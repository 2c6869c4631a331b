package contract

import (
	"errors"
	"strconv"
	"strings"
)

// Tokens with a fixed meaning. A leading underscore decodes to a leading
// dot, which no namespace, group or version can start with, so these never
// collide with an escaped Kubernetes name (docs/contract.md §6).
const (
	// CoreGroupToken stands for the legacy core API group ("").
	CoreGroupToken = "core"
	// namedCoreGroupToken stands for an API group named "core" (an
	// aggregated API may serve one): its first letter escaped, a form
	// EscapeToken never writes, so it cannot meet the legacy group's.
	namedCoreGroupToken = "%63ore"
	// ClusterScopeToken takes the namespace position for cluster-scoped objects.
	ClusterScopeToken = "_cluster"
	// SnapshotToken takes the namespace position in snapshot marker subjects.
	SnapshotToken = "_snapshot"
	// TermToken takes the group position in the subject of term markers,
	// <prefix>.<cluster>._term.
	TermToken = "_term"
	// emptyToken stands for the empty string, which NATS cannot carry as a token.
	emptyToken = "%"
)

// ErrBadToken is returned when a subject or one of its tokens is not one
// this package made.
var ErrBadToken = errors.New("contract: malformed subject token")

// badToken wraps ErrBadToken with what was wrong. The package builds its
// messages without fmt, which would double what it compiles (see doc.go).
func badToken(what string) error { return &wrapped{ErrBadToken.Error() + ": " + what, ErrBadToken} }

// wrapped is an error with its own message that unwraps to err.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

const hexDigits = "0123456789ABCDEF"

// EscapeToken turns any string into one NATS subject token, reversibly:
// ASCII letters, digits and '-' stay, '.' becomes '_', and every other byte
// (including '_', '%', '*', '>', ':', spaces and non-ASCII) becomes %XX.
// The dot mapping keeps groups and DNS names readable (networking_k8s_io).
func EscapeToken(s string) string {
	if s == "" {
		return emptyToken
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !isPlain(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isPlain(c):
			b.WriteByte(c)
		case c == '.':
			b.WriteByte('_')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0x0f])
		}
	}
	return b.String()
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(tok string) (string, error) {
	if tok == emptyToken {
		return "", nil
	}
	if tok == "" {
		return "", badToken("empty")
	}
	var b strings.Builder
	b.Grow(len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case isPlain(c):
			b.WriteByte(c)
		case c == '_':
			b.WriteByte('.')
		case c == '%' && i+2 < len(tok):
			hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
			if hi < 0 || lo < 0 {
				return "", badToken(strconv.Quote(tok))
			}
			// Only the escapes EscapeToken writes are accepted, so every
			// string has exactly one token.
			if c := byte(hi<<4 | lo); isPlain(c) || c == '.' {
				return "", badToken(strconv.Quote(tok) + " is not in canonical form")
			} else {
				b.WriteByte(c)
			}
			i += 2
		default:
			return "", badToken(strconv.Quote(tok))
		}
	}
	return b.String(), nil
}

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

package kubejson

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// needsLook is the specification of special and specialInHTML, byte by byte.
func needsLook(word string, escapeHTML bool) bool {
	safe := &plainASCII
	if escapeHTML {
		safe = &htmlSafe
	}
	for i := range len(word) {
		if b := word[i]; b >= utf8.RuneSelf || !safe[b] {
			return true
		}
	}
	return false
}

// special and specialInHTML are exact: every byte value at every place of an otherwise
// plain word, and random words mixing the bytes around its thresholds.
func TestSpecialBytes(t *testing.T) {
	check := func(word string) {
		t.Helper()
		w := load8(word, 0)
		if got, want := special(w), needsLook(word, false); got != want {
			t.Fatalf("special(%q) = %v, want %v", word, got, want)
		}
		if got, want := special(w) || specialInHTML(w), needsLook(word, true); got != want {
			t.Fatalf("special or specialInHTML(%q) = %v, want %v", word, got, want)
		}
	}
	for at := range 8 {
		for b := range 256 {
			word := []byte(strings.Repeat("a", 8))
			word[at] = byte(b)
			check(string(word))
		}
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '#', '&', '<', '>', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0x81, 0xff, 'a'}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var word [8]byte
		for i := range word {
			word[i] = edges[r.IntN(len(edges))]
		}
		check(string(word[:]))
	}
}

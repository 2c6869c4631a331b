package kubejson

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plainASCII marks the ASCII bytes encoding/json copies into a string as
// they are; htmlSafe additionally leaves out <, > and &, which it escapes
// when HTML escaping is on.
var plainASCII, htmlSafe = asciiSets()

func asciiSets() (plain, html [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		plain[b] = b != '"' && b != '\\'
		html[b] = plain[b] && b != '<' && b != '>' && b != '&'
	}
	return plain, html
}

// appendString appends s as encoding/json writes a string: quotes and
// backslashes escaped, control characters as \b, \f, \n, \r, \t or \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped, and <, > and &
// escaped only when escapeHTML is set.
func appendString(dst []byte, s string, escapeHTML bool) []byte {
	safe := &plainASCII
	if escapeHTML {
		safe = &htmlSafe
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none of them needs a look.
		if i+8 <= len(s) && !special(load8(s, i)) && (!escapeHTML || !specialInHTML(load8(s, i))) {
			i += 8
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end a line in JavaScript source, so
		// encoding/json escapes them whatever the HTML setting.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const (
	ones = 0x0101010101010101 // 0x01 in every byte
	high = 0x8080808080808080 // the top bit of every byte
)

// load8 reads s[i:i+8] as one little-endian word (the compiler makes the
// eight loads one).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// special reports whether any of the eight bytes of w is a control
// character, a quote or backslash, or not ASCII: a byte appendString does
// more than copy.
func special(w uint64) bool {
	return (w|below(w, 0x20)|zeroByte(w^(ones*'"'))|zeroByte(w^(ones*'\\')))&high != 0
}

// specialInHTML reports whether any of the eight bytes of w is <, > or &,
// which appendString escapes as well when asked to.
func specialInHTML(w uint64) bool {
	return (zeroByte(w^(ones*'<'))|zeroByte(w^(ones*'>'))|zeroByte(w^(ones*'&')))&high != 0
}

// zeroByte has a byte's top bit set if w has a zero byte (exact as to
// whether there is one, which is all mayEscape asks).
func zeroByte(w uint64) uint64 { return (w - ones) &^ w }

// below has a byte's top bit set if w has a byte under n (n <= 0x80).
func below(w uint64, n uint64) uint64 { return (w - ones*n) &^ w }

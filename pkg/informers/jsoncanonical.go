package informers

import (
	"bytes"
	"encoding/json"
)

// canonicalString reports whether the JSON string s (quotes included) is
// as encoding/json writes its value: HTML characters and the line and
// paragraph separators escaped, and only the escapes it uses. jsontext
// has already rejected invalid UTF-8 and raw control characters.
func canonicalString(s []byte) bool {
	// One vectorized search per byte is faster than a loop over them all.
	body := s[1 : len(s)-1]
	if bytes.IndexByte(body, '<') >= 0 || bytes.IndexByte(body, '>') >= 0 || bytes.IndexByte(body, '&') >= 0 {
		return false
	}
	for rest := body; ; {
		i := bytes.IndexByte(rest, 0xE2)
		if i < 0 {
			break
		}
		if i+2 < len(rest) && rest[i+1] == 0x80 && (rest[i+2] == 0xA8 || rest[i+2] == 0xA9) {
			return false
		}
		rest = rest[i+1:]
	}
	if bytes.IndexByte(body, '\\') < 0 {
		return true
	}
	var v string
	if err := json.Unmarshal(s, &v); err != nil {
		return false
	}
	again, err := json.Marshal(v)
	return err == nil && bytes.Equal(again, s)
}

// canonicalInteger reports whether the JSON number n is an integer that
// the dynamic client decodes as an int64 and encoding/json writes back
// the same: no fraction or exponent, no leading zero or "-0", and at
// most 18 digits. Other numbers go through the Unstructured decoding.
func canonicalInteger(n []byte) bool {
	digits := n
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || len(n) > 1)) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

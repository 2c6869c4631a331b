package kubejson

import (
	"math"
	"strconv"
	"unsafe"
)

func encodeBool(s *state, p unsafe.Pointer) error {
	s.buf = strconv.AppendBool(s.buf, *(*bool)(p))
	return nil
}

// intEncoder reads a signed integer of size bytes, whatever its type's
// name (int32, a named int64, ...).
func intEncoder(size uintptr) encodeFunc {
	return func(s *state, p unsafe.Pointer) error {
		s.buf = strconv.AppendInt(s.buf, loadInt(p, size), 10)
		return nil
	}
}

func uintEncoder(size uintptr) encodeFunc {
	return func(s *state, p unsafe.Pointer) error {
		s.buf = strconv.AppendUint(s.buf, loadUint(p, size), 10)
		return nil
	}
}

func loadInt(p unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(p))
	case 2:
		return int64(*(*int16)(p))
	case 4:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

func loadUint(p unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

func encodeFloat32(s *state, p unsafe.Pointer) error {
	return s.appendFloat(float64(*(*float32)(p)), 32)
}

func encodeFloat64(s *state, p unsafe.Pointer) error { return s.appendFloat(*(*float64)(p), 64) }

// appendFloat writes f as encoding/json does: the shortest representation
// that reads back as the same value, in exponent form only below 1e-6 or
// from 1e21, with a one-digit negative exponent written without its zero.
func (s *state) appendFloat(f float64, bits int) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return errUnsupportedFloat
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(s.buf, f, format, -1, bits)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	s.buf = b
	return nil
}

func encodeString(s *state, p unsafe.Pointer) error {
	s.buf = appendString(s.buf, *(*string)(p), false)
	return nil
}

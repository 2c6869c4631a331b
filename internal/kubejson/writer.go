package kubejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
)

// maxDepth bounds how deep Append follows pointers, maps and slices. No
// Kubernetes object comes near it; a cyclic value does, and is then left
// to encoding/json, which reports the cycle.
const maxDepth = 1000

// errTooDeep ends an encoding that went past maxDepth.
var errTooDeep = errors.New("kubejson: value nested too deeply")

// Writer appends values as JSON. The zero Writer is ready to use, and it
// is safe for concurrent use: what it keeps is the encoder compiled for
// each type it has seen, bounded by the number of types, and scratch
// space for sorting map keys.
type Writer struct {
	encoders sync.Map // reflect.Type → *typeEncoder
	scratch  sync.Pool
}

// Append appends the JSON encoding of v to dst, as encoding/json's
// Encoder.Encode with SetEscapeHTML(false) writes it, without the
// trailing newline. On an error dst's length is not meaningful beyond
// len(dst) on entry: the caller keeps dst[:len(dst)] and encodes v some
// other way (with encoding/json, which reproduces the error).
func (w *Writer) Append(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	s := w.state()
	defer w.scratch.Put(s)
	s.buf, s.depth = dst, 0
	err := s.appendValue(reflect.ValueOf(v))
	dst = s.buf
	s.buf = nil
	return dst, err
}

// state is one Append's working space.
type state struct {
	w     *Writer
	buf   []byte
	depth int
	// spareKeys holds slices for sorting map keys, one taken per map
	// being written.
	spareKeys [][]string
	// quantity is scratch space for a Quantity's canonical form, and
	// quantities the canonical forms computed so far.
	quantity   []byte
	quantities map[quantityKey]string
	// maps holds scratch space for writing maps, by map type.
	maps map[reflect.Type]*mapScratch
	// fallback is where encoding/json writes the values handed to it.
	fallback bytes.Buffer
}

func (w *Writer) state() *state {
	if s, ok := w.scratch.Get().(*state); ok {
		return s
	}
	return &state{w: w}
}

// open starts a value that holds others: for a nil one it writes null
// and reports false; else it counts one level of nesting, which leave
// undoes, and reports false with errTooDeep past maxDepth.
func (s *state) open(isNil bool) (bool, error) {
	if isNil {
		s.buf = append(s.buf, "null"...)
		return false, nil
	}
	if s.depth == maxDepth {
		return false, errTooDeep
	}
	s.depth++
	return true, nil
}

func (s *state) leave() { s.depth-- }

// sortedKeys is m's keys in order, in a slice taken from s; hand it back
// with giveKeys once the map is written.
func sortedKeys[V any](s *state, m map[string]V) []string {
	var keys []string
	if n := len(s.spareKeys); n > 0 {
		keys = s.spareKeys[n-1]
		s.spareKeys = s.spareKeys[:n-1]
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// giveKeys keeps keys for the next map, without holding on to its strings.
func (s *state) giveKeys(keys []string) {
	clear(keys)
	s.spareKeys = append(s.spareKeys, keys[:0])
}

// withEncodingJSON appends v as encoding/json writes it: an addressable
// value through its address, so that methods with pointer receivers are
// used exactly when encoding/json uses them.
func (s *state) withEncodingJSON(v reflect.Value) error {
	if v.CanAddr() {
		return s.marshalJSON(v.Addr().Interface())
	}
	return s.marshalJSON(v.Interface())
}

// marshalJSON appends x as encoding/json writes it.
func (s *state) marshalJSON(x any) error {
	s.fallback.Reset()
	enc := json.NewEncoder(&s.fallback)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return err
	}
	out := s.fallback.Bytes()
	s.buf = append(s.buf, out[:len(out)-1]...) // Encode's newline
	return nil
}

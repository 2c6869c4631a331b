package kubejson

import (
	"reflect"
	"slices"
	"strings"
	"unsafe"
)

// mapEncoder writes a map as encoding/json does: null when nil, else an
// object with its keys sorted. Only string keys are written here; a map
// keyed otherwise goes to encoding/json.
func (c *compiler) mapEncoder(t reflect.Type) encodeFunc {
	if t.Key().Kind() != reflect.String {
		return withEncodingJSON(t)
	}
	if t.Elem().Kind() == reflect.String && !hasOwnEncoding(t.Elem()) {
		return encodeStringMap
	}
	elem := c.compile(t.Elem())
	return func(s *state, p unsafe.Pointer) error {
		if ok, err := s.open(*(*unsafe.Pointer)(p) == nil); !ok {
			return err
		}
		defer s.leave()
		return s.appendMap(reflect.NewAt(t, p).Elem(), elem)
	}
}

// encodeStringMap writes a map of strings to strings (labels, annotations
// and ConfigMap data; its key and value types may be named) without
// reflection on its entries.
func encodeStringMap(s *state, p unsafe.Pointer) error {
	m := *(*map[string]string)(p)
	if m == nil {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	keys := sortedKeys(s, m)
	defer s.giveKeys(keys)
	s.buf = append(s.buf, '{')
	for i, k := range keys {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		s.buf = appendString(s.buf, k, false)
		s.buf = append(s.buf, ':')
		s.buf = appendString(s.buf, m[k], false)
	}
	s.buf = append(s.buf, '}')
	return nil
}

// appendMap writes a map with string keys of any type. Its entries are
// copied into slices kept per map type (see mapScratch) and written from
// there; a value whose encoding could depend on addressability goes to
// encoding/json as the unaddressable map value it is.
func (s *state) appendMap(v reflect.Value, elem *typeEncoder) error {
	n := v.Len()
	if n == 0 {
		s.buf = append(s.buf, "{}"...)
		return nil
	}
	sc := s.mapScratch(v.Type(), n)
	defer sc.release(n)
	var iter reflect.MapIter
	iter.Reset(v)
	for i := 0; iter.Next(); i++ {
		sc.keys.Index(i).SetIterKey(&iter)
		sc.values.Index(i).SetIterValue(&iter)
	}
	keys := unsafe.Slice((*string)(sc.keys.UnsafePointer()), n)
	values, size := sc.values.UnsafePointer(), v.Type().Elem().Size()
	order := sc.order[:n]
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	s.buf = append(s.buf, '{')
	for j, i := range order {
		if j > 0 {
			s.buf = append(s.buf, ',')
		}
		s.buf = appendString(s.buf, keys[i], false)
		s.buf = append(s.buf, ':')
		var err error
		if elem.unaddressable {
			err = s.marshalJSON(sc.values.Index(i).Interface()) // a copy
		} else {
			err = elem.encode(s, unsafe.Add(values, uintptr(i)*size))
		}
		if err != nil {
			return err
		}
	}
	s.buf = append(s.buf, '}')
	return nil
}

// mapScratch holds one map type's entries while the map is written, kept
// in the state between calls, so that writing a map costs no allocation
// once a map of its type and size has been written. A map of the same
// type inside one being written gets slices of its own.
type mapScratch struct {
	keys, values reflect.Value // slices of the key and value type
	order        []int
	busy         bool
}

func (s *state) mapScratch(t reflect.Type, n int) *mapScratch {
	sc := s.maps[t]
	if sc == nil || sc.busy {
		sc = &mapScratch{}
		if s.maps == nil {
			s.maps = map[reflect.Type]*mapScratch{}
		}
		if s.maps[t] == nil {
			s.maps[t] = sc
		}
	}
	if !sc.keys.IsValid() || sc.keys.Len() < n {
		size := max(n, 4)
		sc.keys = reflect.MakeSlice(reflect.SliceOf(t.Key()), size, size)
		sc.values = reflect.MakeSlice(reflect.SliceOf(t.Elem()), size, size)
		sc.order = make([]int, size)
	}
	sc.busy = true
	return sc
}

// release zeroes the entries copied in, so that the scratch space does
// not keep an object's strings and values alive.
func (sc *mapScratch) release(n int) {
	for i := range n {
		sc.keys.Index(i).SetZero()
		sc.values.Index(i).SetZero()
	}
	sc.busy = false
}

// needsUnaddressable reports whether encoding/json could write a value of
// t differently when it is addressable: when t, or a struct field or
// array element held in it directly, has a MarshalJSON or MarshalText
// method on its pointer only. Map values are not addressable, so such a
// type is encoded from an unaddressable copy.
func needsUnaddressable(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if marshalsByPointer(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Array:
		return needsUnaddressable(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if needsUnaddressable(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

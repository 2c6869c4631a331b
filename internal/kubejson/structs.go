package kubejson

import (
	"math"
	"reflect"
	"unsafe"
)

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// member is a struct field ready to write.
type member struct {
	// hops lead from the struct to the field: the first adds its offset;
	// each later one follows the embedded pointer reached so far when
	// deref is set (a nil one leaves the field out), then adds its own.
	// Most fields are one hop away.
	hops []hop
	// prefix is `"name":`. encoding/json writes tag names unescaped: a
	// valid tag name has no character that needs escaping.
	prefix string
	// empty, when set (omitempty), reports whether the field is left out;
	// so does omitZero (omitzero).
	empty, omitZero func(unsafe.Pointer) bool
	elem            *typeEncoder
}

type hop struct {
	offset uintptr
	deref  bool
}

func (c *compiler) structEncoder(t reflect.Type) encodeFunc {
	fields, ok := structFields(t)
	if !ok {
		return withEncodingJSON(t)
	}
	members := make([]member, len(fields))
	for i, f := range fields {
		members[i] = member{
			hops:   hopsTo(t, f.index),
			prefix: `"` + f.name + `":`,
			elem:   c.compile(f.typ),
		}
		if f.omitEmpty {
			members[i].empty = emptyTest(f.typ)
		}
		if f.omitZero {
			members[i].omitZero = zeroTest(f.typ)
		}
	}
	return func(s *state, p unsafe.Pointer) error {
		next := byte('{')
		for i := range members {
			m := &members[i]
			fp := unsafe.Add(p, m.hops[0].offset)
			if len(m.hops) > 1 {
				if fp = m.follow(fp); fp == nil {
					continue
				}
			}
			if m.empty != nil && m.empty(fp) || m.omitZero != nil && m.omitZero(fp) {
				continue
			}
			s.buf = append(s.buf, next)
			next = ','
			s.buf = append(s.buf, m.prefix...)
			if err := m.elem.encode(s, fp); err != nil {
				return err
			}
		}
		if next == '{' {
			s.buf = append(s.buf, "{}"...)
		} else {
			s.buf = append(s.buf, '}')
		}
		return nil
	}
}

// follow goes from the first hop's target through embedded pointers to
// the field, or returns nil at a nil pointer.
func (m *member) follow(p unsafe.Pointer) unsafe.Pointer {
	for _, h := range m.hops[1:] {
		if h.deref {
			if p = *(*unsafe.Pointer)(p); p == nil {
				return nil
			}
		}
		p = unsafe.Add(p, h.offset)
	}
	return p
}

// hopsTo turns a field's index into the offsets that lead to it.
func hopsTo(t reflect.Type, index []int) []hop {
	hops := make([]hop, len(index))
	deref := false
	for i, x := range index {
		if t.Kind() == reflect.Pointer {
			t, deref = t.Elem(), true
		}
		f := t.Field(x)
		hops[i] = hop{offset: f.Offset, deref: deref}
		t, deref = f.Type, false
	}
	return hops
}

// emptyTest is encoding/json's test for omitempty on a field of type t.
func emptyTest(t reflect.Type) func(unsafe.Pointer) bool {
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) bool { return len(*(*string)(p)) == 0 }
	case reflect.Slice:
		return func(p unsafe.Pointer) bool { return (*sliceHeader)(p).len == 0 }
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			// Labels, annotations, data: any such map has this layout.
			return func(p unsafe.Pointer) bool { return len(*(*map[string]string)(p)) == 0 }
		}
		return func(p unsafe.Pointer) bool {
			return *(*unsafe.Pointer)(p) == nil || reflect.NewAt(t, p).Elem().Len() == 0
		}
	case reflect.Array:
		n := t.Len()
		return func(unsafe.Pointer) bool { return n == 0 }
	case reflect.Bool:
		return func(p unsafe.Pointer) bool { return !*(*bool)(p) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		size := t.Size()
		return func(p unsafe.Pointer) bool { return loadUint(p, size) == 0 }
	case reflect.Float32:
		// IsZero's test: -0 is not empty.
		return func(p unsafe.Pointer) bool { return math.Float32bits(*(*float32)(p)) == 0 }
	case reflect.Float64:
		return func(p unsafe.Pointer) bool { return math.Float64bits(*(*float64)(p)) == 0 }
	case reflect.Pointer, reflect.Interface:
		// A nil pointer, or an interface without a type (its first word).
		return func(p unsafe.Pointer) bool { return *(*unsafe.Pointer)(p) == nil }
	}
	return nil
}

// zeroTest is encoding/json's test for omitzero on a field of type t: the
// type's IsZero method where it has one, else the zero value.
func zeroTest(t reflect.Type) func(unsafe.Pointer) bool {
	test := valueZeroTest(t)
	return func(p unsafe.Pointer) bool { return test(reflect.NewAt(t, p).Elem()) }
}

func valueZeroTest(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() || v.Interface().(isZeroer).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.IsNil() || v.Interface().(isZeroer).IsZero() }
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(isZeroer).IsZero() }
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				boxed := reflect.New(v.Type()).Elem()
				boxed.Set(v)
				v = boxed
			}
			return v.Addr().Interface().(isZeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}

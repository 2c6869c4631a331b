package kubejson

import "reflect"

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// member is a struct field ready to write.
type member struct {
	index []int
	// prefix is `"name":`. encoding/json writes tag names unescaped: a
	// valid tag name has no character that needs escaping.
	prefix    string
	omitEmpty bool
	// omitZero, when set, reports whether the field is left out.
	omitZero func(reflect.Value) bool
	elem     *typeEncoder
}

func (c *compiler) structEncoder(t reflect.Type) encodeFunc {
	fields, ok := structFields(t)
	if !ok {
		return encodeWithEncodingJSON
	}
	members := make([]member, len(fields))
	for i, f := range fields {
		members[i] = member{
			index:     f.index,
			prefix:    `"` + f.name + `":`,
			omitEmpty: f.omitEmpty,
			elem:      c.compile(f.typ),
		}
		if f.omitZero {
			members[i].omitZero = zeroTest(f.typ)
		}
	}
	return func(s *state, v reflect.Value) error {
		next := byte('{')
	members:
		for i := range members {
			m := &members[i]
			fv := v
			for _, i := range m.index {
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue members
					}
					fv = fv.Elem()
				}
				fv = fv.Field(i)
			}
			if m.omitEmpty && isEmpty(fv) || m.omitZero != nil && m.omitZero(fv) {
				continue
			}
			s.buf = append(s.buf, next)
			next = ','
			s.buf = append(s.buf, m.prefix...)
			if err := m.elem.encode(s, fv); err != nil {
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

// isEmpty is encoding/json's test for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// zeroTest is encoding/json's test for omitzero on a field of type t: the
// type's IsZero method where it has one, else the zero value.
func zeroTest(t reflect.Type) func(reflect.Value) bool {
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

package kubejson

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
)

// encodeFunc appends v, a value of the type it was compiled for, to s.buf.
type encodeFunc func(s *state, v reflect.Value) error

// typeEncoder holds a type's compiled encodeFunc. It is a pointer so that
// a recursive type can refer to its own encoder while it is compiled.
type typeEncoder struct {
	encode encodeFunc
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()

	errUnsupportedFloat = errors.New("kubejson: NaN or infinite float")
)

// encoderFor returns t's encoder, compiling it (and the types it holds)
// on first use.
func (w *Writer) encoderFor(t reflect.Type) *typeEncoder {
	if e, ok := w.encoders.Load(t); ok {
		return e.(*typeEncoder)
	}
	c := compiler{w: w, done: map[reflect.Type]*typeEncoder{}}
	e := c.compile(t)
	// Publish only finished encoders: a type is in c.done from the moment
	// its compilation starts.
	for t, done := range c.done {
		w.encoders.LoadOrStore(t, done)
	}
	return e
}

// compiler compiles one type and the types it holds.
type compiler struct {
	w    *Writer
	done map[reflect.Type]*typeEncoder
}

func (c *compiler) compile(t reflect.Type) *typeEncoder {
	if e, ok := c.done[t]; ok {
		return e
	}
	if e, ok := c.w.encoders.Load(t); ok {
		return e.(*typeEncoder)
	}
	e := &typeEncoder{}
	c.done[t] = e
	e.encode = c.build(t)
	return e
}

// build chooses how values of t are written, following encoding/json's
// newTypeEncoder: a type's own MarshalJSON or MarshalText comes before its
// kind.
func (c *compiler) build(t reflect.Type) encodeFunc {
	if f := kubernetesEncoder(t); f != nil {
		return f
	}
	if hasOwnEncoding(t) || t == numberType {
		return encodeWithEncodingJSON
	}
	switch t.Kind() {
	case reflect.Bool:
		return encodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return encodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return encodeUint
	case reflect.Float32:
		return encodeFloat32
	case reflect.Float64:
		return encodeFloat64
	case reflect.String:
		return encodeString
	case reflect.Interface:
		return encodeInterface
	case reflect.Pointer:
		return c.pointerEncoder(t)
	case reflect.Slice:
		return c.sliceEncoder(t)
	case reflect.Array:
		return c.arrayEncoder(t)
	case reflect.Map:
		return c.mapEncoder(t)
	case reflect.Struct:
		return c.structEncoder(t)
	}
	// Channels, functions, complex numbers: encoding/json's error.
	return encodeWithEncodingJSON
}

// hasOwnEncoding reports whether encoding/json writes t through a
// MarshalJSON or MarshalText method, for values or for addressable ones.
func hasOwnEncoding(t reflect.Type) bool {
	return marshals(t) || marshalsByPointer(t)
}

// marshals reports whether t has MarshalJSON or MarshalText.
func marshals(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType)
}

// marshalsByPointer reports whether only *t has MarshalJSON or
// MarshalText, which encoding/json then uses for addressable values only.
func marshalsByPointer(t reflect.Type) bool {
	return t.Kind() != reflect.Pointer && !marshals(t) && marshals(reflect.PointerTo(t))
}

func encodeWithEncodingJSON(s *state, v reflect.Value) error { return s.withEncodingJSON(v) }

func encodeBool(s *state, v reflect.Value) error {
	s.buf = strconv.AppendBool(s.buf, v.Bool())
	return nil
}

func encodeInt(s *state, v reflect.Value) error {
	s.buf = strconv.AppendInt(s.buf, v.Int(), 10)
	return nil
}

func encodeUint(s *state, v reflect.Value) error {
	s.buf = strconv.AppendUint(s.buf, v.Uint(), 10)
	return nil
}

func encodeFloat32(s *state, v reflect.Value) error { return s.appendFloat(v.Float(), 32) }
func encodeFloat64(s *state, v reflect.Value) error { return s.appendFloat(v.Float(), 64) }

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

func encodeString(s *state, v reflect.Value) error {
	s.buf = appendString(s.buf, v.String(), false)
	return nil
}

func encodeInterface(s *state, v reflect.Value) error {
	if ok, err := s.open(v.IsNil()); !ok {
		return err
	}
	defer s.leave()
	elem := v.Elem()
	return s.w.encoderFor(elem.Type()).encode(s, elem)
}

func (c *compiler) pointerEncoder(t reflect.Type) encodeFunc {
	elem := c.compile(t.Elem())
	return func(s *state, v reflect.Value) error {
		if ok, err := s.open(v.IsNil()); !ok {
			return err
		}
		defer s.leave()
		return elem.encode(s, v.Elem())
	}
}

func (c *compiler) sliceEncoder(t reflect.Type) encodeFunc {
	if t.Elem().Kind() == reflect.Uint8 {
		if !marshals(reflect.PointerTo(t.Elem())) {
			return encodeBytes
		}
	}
	array := c.arrayEncoder(t)
	return func(s *state, v reflect.Value) error {
		if ok, err := s.open(v.IsNil()); !ok {
			return err
		}
		defer s.leave()
		return array(s, v)
	}
}

// encodeBytes writes a byte slice as a base64 string, as encoding/json does.
func encodeBytes(s *state, v reflect.Value) error {
	if v.IsNil() {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	s.buf = append(s.buf, '"')
	s.buf = base64.StdEncoding.AppendEncode(s.buf, v.Bytes())
	s.buf = append(s.buf, '"')
	return nil
}

func (c *compiler) arrayEncoder(t reflect.Type) encodeFunc {
	elem := c.compile(t.Elem())
	return func(s *state, v reflect.Value) error {
		s.buf = append(s.buf, '[')
		for i := range v.Len() {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			if err := elem.encode(s, v.Index(i)); err != nil {
				return err
			}
		}
		s.buf = append(s.buf, ']')
		return nil
	}
}

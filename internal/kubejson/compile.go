package kubejson

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"unsafe"
)

// encodeFunc appends the value at p, of the type it was compiled for, to
// s.buf. p points into memory encoding/json would see as addressable (the
// object behind a pointer, a slice's element, a copy made addressable on
// purpose), so a method on the pointer applies where encoding/json would
// use it. Reading through p instead of a reflect.Value spares the checks
// reflect makes on every field and element.
type encodeFunc func(s *state, p unsafe.Pointer) error

// typeEncoder holds a type's compiled encodeFunc. It is a pointer so that
// a recursive type can refer to its own encoder while it is compiled.
type typeEncoder struct {
	encode encodeFunc
	// pointee, set for pointer types written as what they point to,
	// writes a value of the type given the pointer itself rather than
	// its address: a pointer held in an interface, or handed to Append,
	// is written without a copy.
	pointee func(s *state, q unsafe.Pointer) error
	// unaddressable records needsUnaddressable for the type: a value of
	// it that encoding/json sees as unaddressable (a map value, an
	// interface's content) is handed to encoding/json as it is.
	unaddressable bool
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
	e := &typeEncoder{unaddressable: needsUnaddressable(t, map[reflect.Type]bool{})}
	c.done[t] = e
	e.encode, e.pointee = c.build(t)
	return e
}

// build chooses how values of t are written, following encoding/json's
// newTypeEncoder: a type's own MarshalJSON or MarshalText comes before its
// kind.
func (c *compiler) build(t reflect.Type) (encodeFunc, func(*state, unsafe.Pointer) error) {
	if f, pointee := kubernetesEncoder(t); f != nil {
		return f, pointee
	}
	if hasOwnEncoding(t) || t == numberType {
		return withEncodingJSON(t), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return encodeBool, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intEncoder(t.Size()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintEncoder(t.Size()), nil
	case reflect.Float32:
		return encodeFloat32, nil
	case reflect.Float64:
		return encodeFloat64, nil
	case reflect.String:
		return encodeString, nil
	case reflect.Interface:
		return interfaceEncoder(t), nil
	case reflect.Pointer:
		return c.pointerEncoder(t)
	case reflect.Slice:
		return c.sliceEncoder(t), nil
	case reflect.Array:
		return c.arrayEncoder(t), nil
	case reflect.Map:
		return c.mapEncoder(t), nil
	case reflect.Struct:
		return c.structEncoder(t), nil
	}
	// Channels, functions, complex numbers: encoding/json's error.
	return withEncodingJSON(t), nil
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

// withEncodingJSON hands the (addressable) value of type t at p to
// encoding/json.
func withEncodingJSON(t reflect.Type) encodeFunc {
	return func(s *state, p unsafe.Pointer) error { return s.withEncodingJSON(reflect.NewAt(t, p).Elem()) }
}

// interfaceEncoder writes an interface's content, which encoding/json
// sees as unaddressable.
func interfaceEncoder(t reflect.Type) encodeFunc {
	return func(s *state, p unsafe.Pointer) error {
		v := reflect.NewAt(t, p).Elem()
		if ok, err := s.open(v.IsNil()); !ok {
			return err
		}
		defer s.leave()
		return s.appendValue(v.Elem())
	}
}

// appendValue writes v, a value encoding/json sees as unaddressable: a
// pointer as what it points to, a type whose encoding could depend on
// addressability through encoding/json, anything else from a copy.
func (s *state) appendValue(v reflect.Value) error {
	e := s.w.encoderFor(v.Type())
	switch {
	case e.pointee != nil:
		return e.pointee(s, v.UnsafePointer())
	case e.unaddressable:
		return s.withEncodingJSON(v)
	}
	box := reflect.New(v.Type())
	box.Elem().Set(v)
	return e.encode(s, box.UnsafePointer())
}

func (c *compiler) pointerEncoder(t reflect.Type) (encodeFunc, func(*state, unsafe.Pointer) error) {
	elem := c.compile(t.Elem())
	pointee := func(s *state, q unsafe.Pointer) error {
		if ok, err := s.open(q == nil); !ok {
			return err
		}
		defer s.leave()
		return elem.encode(s, q)
	}
	return func(s *state, p unsafe.Pointer) error { return pointee(s, *(*unsafe.Pointer)(p)) }, pointee
}

// sliceHeader is the layout of every slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func (c *compiler) sliceEncoder(t reflect.Type) encodeFunc {
	if t.Elem().Kind() == reflect.Uint8 && !marshals(reflect.PointerTo(t.Elem())) {
		return encodeBytes
	}
	elem, size := c.compile(t.Elem()), t.Elem().Size()
	return func(s *state, p unsafe.Pointer) error {
		h := (*sliceHeader)(p)
		if ok, err := s.open(h.data == nil); !ok {
			return err
		}
		defer s.leave()
		return s.appendArray(h.data, h.len, size, elem)
	}
}

// encodeBytes writes a byte slice as a base64 string, as encoding/json does.
func encodeBytes(s *state, p unsafe.Pointer) error {
	h := (*sliceHeader)(p)
	if h.data == nil {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	s.buf = append(s.buf, '"')
	s.buf = base64.StdEncoding.AppendEncode(s.buf, unsafe.Slice((*byte)(h.data), h.len))
	s.buf = append(s.buf, '"')
	return nil
}

func (c *compiler) arrayEncoder(t reflect.Type) encodeFunc {
	elem, n, size := c.compile(t.Elem()), t.Len(), t.Elem().Size()
	return func(s *state, p unsafe.Pointer) error { return s.appendArray(p, n, size, elem) }
}

// appendArray writes the n elements of size bytes each from p on.
func (s *state) appendArray(p unsafe.Pointer, n int, size uintptr, elem *typeEncoder) error {
	s.buf = append(s.buf, '[')
	for i := range n {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		if err := elem.encode(s, unsafe.Add(p, uintptr(i)*size)); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, ']')
	return nil
}

package kubejson

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityFields are the offsets of resource.Quantity's unexported
// fields, found by reflection: the canonical form it cached (s), and its
// value as an int64 amount (i.value, i.scale) or, when d.Dec is set, an
// inf.Dec.
type quantityFields struct {
	cached, value, scale, dec uintptr
}

// findQuantityFields reports false if Quantity no longer has the fields
// it had when this was written; its values then go to encoding/json.
func findQuantityFields() (quantityFields, bool) {
	var f quantityFields
	for _, field := range []struct {
		path []string
		kind reflect.Kind
		to   *uintptr
	}{
		{[]string{"s"}, reflect.String, &f.cached},
		{[]string{"i", "value"}, reflect.Int64, &f.value},
		{[]string{"i", "scale"}, reflect.Int32, &f.scale},
		{[]string{"d", "Dec"}, reflect.Pointer, &f.dec},
	} {
		t := quantityType
		var offset uintptr
		for _, name := range field.path {
			sf, ok := t.FieldByName(name)
			if !ok || len(sf.Index) != 1 {
				return quantityFields{}, false
			}
			offset += sf.Offset
			t = sf.Type
		}
		if t.Kind() != field.kind {
			return quantityFields{}, false
		}
		*field.to = offset
	}
	return f, true
}

// quantityKey is everything a Quantity held as an int64 amount is
// written from.
type quantityKey struct {
	value  int64
	scale  int64
	format string
}

// maxRememberedQuantities bounds the canonical forms a state keeps: a
// cluster's objects repeat a few quantities (requests, limits, capacity)
// many times over.
const maxRememberedQuantities = 512

// appendQuantity writes what resource.Quantity.MarshalJSON returns: the
// canonical form the quantity cached, else its canonical form computed
// by CanonicalizeBytes, which only reads the quantity (so calling it on
// an object in an informer's cache is safe). For BinarySI quantities that
// allocates, so the forms computed from int64 amounts are remembered.
func (s *state) appendQuantity(p unsafe.Pointer, f quantityFields) error {
	if c := *(*string)(unsafe.Add(p, f.cached)); c != "" {
		s.appendQuoted(c)
		return nil
	}
	q := (*resource.Quantity)(p)
	var key quantityKey
	memo := *(*unsafe.Pointer)(unsafe.Add(p, f.dec)) == nil
	if memo {
		key = quantityKey{value: *(*int64)(unsafe.Add(p, f.value)), scale: int64(*(*int32)(unsafe.Add(p, f.scale))), format: string(q.Format)}
		if c, ok := s.quantities[key]; ok {
			s.appendQuoted(c)
			return nil
		}
	}
	if s.quantity == nil {
		s.quantity = make([]byte, 0, 64)
	}
	// What CanonicalizeBytes returns may be apimachinery's own memory
	// (its "0"): it is copied, never kept as scratch space to append to.
	number, suffix := q.CanonicalizeBytes(s.quantity[:0])
	start := len(s.buf)
	s.buf = append(s.buf, '"')
	s.buf = append(s.buf, number...)
	s.buf = append(s.buf, suffix...)
	s.buf = append(s.buf, '"')
	if memo && len(s.quantities) < maxRememberedQuantities {
		if s.quantities == nil {
			s.quantities = map[quantityKey]string{}
		}
		s.quantities[key] = string(s.buf[start+1 : len(s.buf)-1])
	}
	return nil
}

func (s *state) appendQuoted(c string) {
	s.buf = append(s.buf, '"')
	s.buf = append(s.buf, c...)
	s.buf = append(s.buf, '"')
}

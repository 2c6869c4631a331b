package kubejson

import (
	"reflect"
	"strconv"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	timeType         = reflect.TypeFor[metav1.Time]()
	quantityType     = reflect.TypeFor[resource.Quantity]()
	intOrStringType  = reflect.TypeFor[intstr.IntOrString]()
	unstructuredType = reflect.TypeFor[*unstructured.Unstructured]()
)

// kubernetesEncoder returns the encoder for a Kubernetes type whose own
// MarshalJSON allocates on every call, written here to the same bytes, or
// nil for any other type. The second result, for a pointer type, writes
// it given the pointer itself (see typeEncoder.pointee).
func kubernetesEncoder(t reflect.Type) (encodeFunc, func(*state, unsafe.Pointer) error) {
	switch t {
	case timeType:
		return encodeTime, nil
	case quantityType:
		if fields, ok := findQuantityFields(); ok {
			return func(s *state, p unsafe.Pointer) error { return s.appendQuantity(p, fields) }, nil
		}
	case intOrStringType:
		return encodeIntOrString, nil
	case unstructuredType:
		return func(s *state, p unsafe.Pointer) error { return encodeUnstructured(s, *(*unsafe.Pointer)(p)) }, encodeUnstructured
	}
	return nil, nil
}

// encodeTime writes what metav1.Time.MarshalJSON returns: null for the
// zero time, else the time in UTC as RFC 3339 in seconds.
func encodeTime(s *state, p unsafe.Pointer) error {
	t := (*metav1.Time)(p)
	if t.IsZero() {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	s.buf = append(s.buf, '"')
	s.buf = t.UTC().AppendFormat(s.buf, time.RFC3339)
	s.buf = append(s.buf, '"')
	return nil
}

// encodeIntOrString writes what intstr.IntOrString.MarshalJSON returns:
// the number, or the string as json.Marshal writes it, with <, > and &
// escaped. An IntOrString of neither type is left to encoding/json, which
// reports MarshalJSON's error.
func encodeIntOrString(s *state, p unsafe.Pointer) error {
	is := (*intstr.IntOrString)(p)
	switch is.Type {
	case intstr.Int:
		s.buf = strconv.AppendInt(s.buf, int64(is.IntVal), 10)
		return nil
	case intstr.String:
		s.buf = appendString(s.buf, is.StrVal, true)
		return nil
	}
	return s.marshalJSON(is)
}

// encodeUnstructured writes what Unstructured.MarshalJSON returns, given
// the *Unstructured: its content as json.NewEncoder(w).Encode writes a
// map[string]any, with <, > and & escaped.
func encodeUnstructured(s *state, q unsafe.Pointer) error {
	if q == nil {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	return s.appendTree((*unstructured.Unstructured)(q).Object)
}

package kubejson

import (
	"reflect"
	"strconv"
	"time"

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
// nil for any other type.
func kubernetesEncoder(t reflect.Type) encodeFunc {
	switch t {
	case timeType:
		return encodeTime
	case quantityType:
		if fields, ok := findQuantityFields(); ok {
			return func(s *state, v reflect.Value) error { return s.appendQuantity(v, fields) }
		}
	case intOrStringType:
		return encodeIntOrString
	case unstructuredType:
		return encodeUnstructured
	}
	return nil
}

// encodeTime writes what metav1.Time.MarshalJSON returns: null for the
// zero time, else the time in UTC as RFC 3339 in seconds.
func encodeTime(s *state, v reflect.Value) error {
	if !v.CanAddr() {
		return s.withEncodingJSON(v)
	}
	t := v.Addr().Interface().(*metav1.Time)
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
func encodeIntOrString(s *state, v reflect.Value) error {
	var is intstr.IntOrString
	if v.CanAddr() {
		is = *v.Addr().Interface().(*intstr.IntOrString)
	} else {
		is = v.Interface().(intstr.IntOrString)
	}
	switch is.Type {
	case intstr.Int:
		s.buf = strconv.AppendInt(s.buf, int64(is.IntVal), 10)
		return nil
	case intstr.String:
		s.buf = appendString(s.buf, is.StrVal, true)
		return nil
	}
	return s.withEncodingJSON(v)
}

// encodeUnstructured writes what Unstructured.MarshalJSON returns: its
// content as json.NewEncoder(w).Encode writes a map[string]any, with <, >
// and & escaped.
func encodeUnstructured(s *state, v reflect.Value) error {
	if v.IsNil() {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	return s.appendTree(v.Interface().(*unstructured.Unstructured).Object)
}

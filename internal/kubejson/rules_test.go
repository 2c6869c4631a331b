package kubejson

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types below each exercise one of encoding/json's rules.

type Inner struct {
	A string `json:"a"`
	B int    `json:"b,omitempty"`
}

type inner struct {
	Hidden string `json:"hidden"`
	//lint:ignore U1000 an unexported field, which encoding/json leaves out
	visible string
}

type embedding struct {
	Inner
	*Pointed `json:",inline"`
	inner
	Tagged Inner `json:"tagged"`
	C      string
	D      string `json:"-"`
	//lint:ignore SA5008 "-," names a field "-", the case under test
	E string `json:"-,"`
	//lint:ignore SA5008 a tag name encoding/json does not accept is the case under test
	F string `json:"back\\slash"`
	G string `json:"ünïcode"`
	//lint:ignore U1000 an unexported field, which encoding/json leaves out
	h string
}

type Pointed struct {
	P string `json:"p"`
}

// Plain's field is named by Go, so vet's check for repeated tags does not
// see the conflict below, which encoding/json settles by depth.
type Plain struct {
	A string
}

type conflict struct {
	Plain
	A string
}

type conflictSameDepth struct {
	Plain
	Other
}

type Other struct {
	A string
}

type quoted struct {
	N int `json:"n,string"`
}

type zeroByValue struct{ n int }

func (z zeroByValue) IsZero() bool { return z.n < 0 }

type zeroByPointer struct{ n int }

func (z *zeroByPointer) IsZero() bool { return z == nil || z.n < 0 }

type omissions struct {
	Bool      bool                       `json:"bool,omitempty"`
	Int       int8                       `json:"int,omitempty"`
	Uint      uint16                     `json:"uint,omitempty"`
	Float     float32                    `json:"float,omitempty"`
	String    string                     `json:"string,omitempty"`
	Slice     []int                      `json:"slice,omitempty"`
	Map       map[string]int             `json:"map,omitempty"`
	Array     [0]int                     `json:"array,omitempty"`
	Pointer   *int                       `json:"pointer,omitempty"`
	Interface any                        `json:"interface,omitempty"`
	Struct    Inner                      `json:"struct,omitempty"`
	ZeroInt   int                        `json:"zeroInt,omitzero"`
	ZeroInner Inner                      `json:"zeroInner,omitzero"`
	ByValue   zeroByValue                `json:"byValue,omitzero"`
	ByPointer zeroByPointer              `json:"byPointer,omitzero"`
	PtrZeroer *zeroByPointer             `json:"ptrZeroer,omitzero"`
	Zeroer    interface{ IsZero() bool } `json:"zeroer,omitzero"`
	Time      metav1.Time                `json:"time,omitempty,omitzero"`
	TimePtr   *metav1.Time               `json:"timePtr,omitempty"`
}

// pointerMarshaler has MarshalJSON on its pointer only: encoding/json
// uses it for addressable values and not for others (map values,
// interface contents).
type pointerMarshaler struct{ N int }

func (p *pointerMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"by pointer"`), nil }

type valueText struct{ N int }

func (v valueText) MarshalText() ([]byte, error) { return []byte("text <&>"), nil }

type loudMarshaler struct{}

func (loudMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(" { \"spaced\" : [ 1 , 2 ] } "), nil
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

type byteName uint8

type holder struct {
	ByPointer  pointerMarshaler             `json:"byPointer"`
	InMap      map[string]pointerMarshaler  `json:"inMap"`
	InSlice    []pointerMarshaler           `json:"inSlice"`
	InArray    [1]pointerMarshaler          `json:"inArray"`
	Text       valueText                    `json:"text"`
	TextKeys   map[string]valueText         `json:"textKeys"`
	Loud       loudMarshaler                `json:"loud"`
	Bytes      []byte                       `json:"bytes"`
	NilBytes   []byte                       `json:"nilBytes"`
	Named      []byteName                   `json:"named"`
	ByteArray  [3]byte                      `json:"byteArray"`
	IntKeys    map[int]string               `json:"intKeys"`
	Number     json.Number                  `json:"number"`
	Any        any                          `json:"any"`
	Raw        json.RawMessage              `json:"raw"`
	Times      map[string]metav1.Time       `json:"times"`
	Quantities map[string]resource.Quantity `json:"quantities"`
	Nested     map[string]map[string][]int  `json:"nested"`
	Uintptr    uintptr                      `json:"uintptr"`
}

func TestSameAsEncodingJSON(t *testing.T) {
	var w Writer
	n := 7
	when := metav1.NewTime(time.Date(2026, 11, 26, 4, 5, 6, 789, time.FixedZone("x", 3600)))
	cached := resource.MustParse("1536Mi")
	_ = cached.String()
	cases := map[string]any{
		"nil":             nil,
		"embedding":       &embedding{Inner: Inner{A: "a", B: 2}, Pointed: &Pointed{P: "p"}, inner: inner{Hidden: "h"}, C: "c", D: "d", E: "e", F: "f", G: "g"},
		"nil embedded":    &embedding{},
		"conflict":        &conflict{Plain: Plain{A: "deep"}, A: "shallow"},
		"same depth":      &conflictSameDepth{Plain: Plain{A: "1"}, Other: Other{A: "2"}},
		"quoted":          &quoted{N: 5},
		"omissions empty": &omissions{ByValue: zeroByValue{-1}, ByPointer: zeroByPointer{-1}},
		"omissions full": &omissions{Bool: true, Int: -1, Uint: 1, Float: 0.5, String: "s", Slice: []int{}, Map: map[string]int{"": 0},
			Pointer: &n, Interface: 0, ZeroInt: 1, ZeroInner: Inner{B: 1}, ByValue: zeroByValue{1}, ByPointer: zeroByPointer{1},
			PtrZeroer: &zeroByPointer{-1}, Zeroer: &zeroByPointer{2}, Time: when, TimePtr: &when},
		"nil zeroer in interface": &omissions{Zeroer: (*zeroByPointer)(nil)},
		"holder": &holder{ByPointer: pointerMarshaler{1}, InMap: map[string]pointerMarshaler{"b": {2}, "a": {3}},
			InSlice: []pointerMarshaler{{4}}, TextKeys: map[string]valueText{"k": {}}, Bytes: []byte("bytes\x00\xff"),
			Named: []byteName{1, 2}, ByteArray: [3]byte{1, 2, 3}, IntKeys: map[int]string{10: "ten", 2: "two"},
			Number: "1.5e3", Any: map[string]any{"x": []any{1, "<"}}, Raw: json.RawMessage(` [ 1 ] `),
			Times:      map[string]metav1.Time{"set": when, "zero": {}},
			Quantities: map[string]resource.Quantity{"cpu": resource.MustParse("250m"), "memory": cached, "zero": {}},
			Nested:     map[string]map[string][]int{"b": {"y": nil, "x": {1}}, "a": nil}, Uintptr: 9},
		"holder by value":                holder{ByPointer: pointerMarshaler{1}},
		"pointer marshaler in interface": map[string]any{"v": pointerMarshaler{1}, "p": &pointerMarshaler{2}},
		"failing marshaler":              map[string]any{"f": failing{}},
		"nan":                            map[string]float64{"nan": math.NaN()},
		"infinite":                       []float32{float32(math.Inf(1))},
		"floats":                         []float64{0, math.Copysign(0, -1), 1e-7, 1e-6, 123456789, 1e20, 1e21, 1.5e-10, math.MaxFloat64, math.SmallestNonzeroFloat64},
		"float32s":                       []float32{1e-7, 1e21, 3.14159, -2.5e-9},
		"strings":                        []string{"plain", "quote\" backslash\\ slash/", "<tag>&amp;", "\x00\x01\b\f\n\r\t\x1f\x7f", "ünïcödé 日本", "\u2028\u2029", "bad\xff\xfeutf8", "\xe2\x80", ""},
		"string keys":                    map[string]string{"<b>": "&", "\u2028": "\x00", "bad\xff": "", "a": "z"},
		"named maps":                     map[byteNameKey]string{"b": "2", "a": "1"},
		"time":                           &when,
		"zero time":                      &metav1.Time{},
		"micro time":                     &metav1.MicroTime{Time: when.Time},
		"duration":                       &metav1.Duration{Duration: 90 * time.Second},
		"quantities": []resource.Quantity{resource.MustParse("1Gi"), resource.MustParse("1.5"), resource.MustParse("100e3"), resource.MustParse("-7Ki"),
			resource.MustParse("0.001"), resource.MustParse("12345678901234567890"), *resource.NewMilliQuantity(1500, resource.DecimalSI),
			*resource.NewQuantity(1025, resource.BinarySI), *resource.NewScaledQuantity(3, 9), {}, cached,
			// One amount in three formats, twice: the canonical forms
			// remembered must be told apart by format.
			*resource.NewQuantity(1<<20, resource.BinarySI), *resource.NewQuantity(1<<20, resource.DecimalSI), *resource.NewQuantity(1<<20, resource.DecimalExponent),
			*resource.NewQuantity(1<<20, resource.DecimalSI), *resource.NewQuantity(1<<20, resource.BinarySI), *resource.NewQuantity(1<<20, resource.DecimalExponent)},
		"int or string":     []intstr.IntOrString{intstr.FromInt32(-8080), intstr.FromString("http<&>"), intstr.FromString("25%")},
		"bad int or string": []intstr.IntOrString{{Type: 7}},
		"raw extension":     []runtime.RawExtension{{Raw: []byte(` {"a" : 1} `)}, {}},
		"cycle":             cyclic(),
		"unstructured": &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w<1>", "labels": map[string]any{"b": "2", "a": "&"}},
			"spec":     map[string]any{"n": int64(-3), "f": 2.5, "big": 1e21, "small": 1e-7, "on": true, "none": nil, "list": []any{int64(1), "x", []any{}, map[string]any{}}, "nilList": []any(nil), "nilMap": map[string]any(nil), "line": "\u2028"},
		}},
		"unstructured nil":        (*unstructured.Unstructured)(nil),
		"unstructured empty":      &unstructured.Unstructured{},
		"unstructured other type": &unstructured.Unstructured{Object: map[string]any{"kind": "X", "odd": uint8(3)}},
		"unstructured nan":        &unstructured.Unstructured{Object: map[string]any{"kind": "X", "f": math.NaN()}},
		"unstructured list":       &unstructured.UnstructuredList{Object: map[string]any{"kind": "List"}, Items: []unstructured.Unstructured{{Object: map[string]any{"a": "<"}}}},
		"deep":                    deep(2 * maxDepth),
		"channel":                 map[string]any{"c": make(chan int)},
	}
	// Refusing is allowed only where encoding/json's own rules or errors
	// are the point of the case.
	mayRefuse := map[string]bool{"unstructured other type": true, "deep": true}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) { requireSame(t, &w, v, mayRefuse[name]) })
	}
}

type byteNameKey string

type node struct {
	Next *node `json:"next"`
}

func cyclic() *node {
	n := &node{}
	n.Next = n
	return n
}

func deep(n int) any {
	var v any = "bottom"
	for range n {
		v = []any{v}
	}
	return v
}

// TestRefusesOnlyWhatItCannotWrite checks the fast path is the one
// taken: the cases it writes itself must not come back as errors.
func TestAppendWritesKubernetesTypesItself(t *testing.T) {
	var w Writer
	for _, v := range []any{
		&metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}, CreationTimestamp: metav1.Now()},
		&unstructured.Unstructured{Object: map[string]any{"a": []any{int64(1), 2.5, "<x>"}}},
		&holder{Quantities: map[string]resource.Quantity{"cpu": resource.MustParse("1")}},
	} {
		if _, err := w.Append(nil, v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
	if _, err := w.Append(nil, deep(2*maxDepth)); !errors.Is(err, errTooDeep) {
		t.Errorf("a value nested past maxDepth: err = %v, want errTooDeep", err)
	}
	if out, err := w.Append(nil, strings.Repeat("x", 3)); err != nil || string(out) != `"xxx"` {
		t.Errorf("a string: %s, %v", out, err)
	}
}

// TestDepthDoesNotLeak: a value found too deep leaves the nesting count
// as it was, and Append starts every value at depth 0 whatever a pooled
// state held, so one failure cannot make later values fail.
func TestDepthDoesNotLeak(t *testing.T) {
	s := &state{depth: maxDepth}
	if ok, err := s.open(false); ok || !errors.Is(err, errTooDeep) {
		t.Fatalf("open at maxDepth: %v, %v; want false, errTooDeep", ok, err)
	}
	if s.depth != maxDepth {
		t.Fatalf("depth after a refused open: %d, want %d", s.depth, maxDepth)
	}
	var w Writer
	for range 20 {
		// The pool may hand this state to the next Append, or drop it.
		w.scratch.Put(&state{w: &w, depth: maxDepth})
		if _, err := w.Append(nil, &metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}}); err != nil {
			t.Fatalf("Append with a pooled state left at maxDepth: %v", err)
		}
	}
}

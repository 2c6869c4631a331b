package kubejson

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// builtInTypes lists every type client-go's scheme knows (the built-in
// API groups, lists and options included), in a fixed order.
func builtInTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var types []reflect.Type
	for _, t := range scheme.Scheme.AllKnownTypes() {
		if !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].PkgPath()+types[i].Name() < types[j].PkgPath()+types[j].Name() })
	return types
}

// awkward holds the characters and bytes encoding/json treats specially.
var awkward = []string{
	"a", "Z", "0", "-", ".", "/", " ", `"`, `\`, "<", ">", "&", "\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f",
	"é", "日", "😀", "\u2028", "\u2029", "\ufffd", "\xff", "\xe2\x80", "\xc3",
}

func awkwardString(r *rand.Rand) string {
	var b strings.Builder
	for range r.Intn(8) {
		b.WriteString(awkward[r.Intn(len(awkward))])
	}
	return b.String()
}

func randomTime(r *rand.Rand) time.Time {
	if r.Intn(4) == 0 {
		return time.Time{}
	}
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -8*3600)}
	return time.Unix(r.Int63n(4e9)-1e9, r.Int63n(1e9)).In(zones[r.Intn(len(zones))])
}

func randomQuantity(r *rand.Rand) resource.Quantity {
	formats := []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}
	var q resource.Quantity
	switch r.Intn(5) {
	case 0:
	case 1:
		q = *resource.NewQuantity(r.Int63n(1<<40)-1<<39, formats[r.Intn(3)])
	case 2:
		q = *resource.NewMilliQuantity(r.Int63n(1e7), formats[r.Intn(3)])
	case 3:
		q = *resource.NewScaledQuantity(r.Int63n(1e6), resource.Scale(r.Intn(19)-9))
	default:
		suffixes := []string{"", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "E-2", "n", "u"}
		digits := strconv.FormatUint(r.Uint64(), 10)[:1+r.Intn(15)]
		if r.Intn(3) == 0 {
			digits += "." + strconv.Itoa(r.Intn(1000))
		}
		q = resource.MustParse(digits + suffixes[r.Intn(len(suffixes))])
	}
	if r.Intn(2) == 0 {
		_ = q.String() // caches the canonical form, as a decoded object may have it
	}
	return q
}

func rawJSON(r *rand.Rand) []byte {
	raws := []string{"", `{"a":1}`, ` { "b" : [ 1 , "<&>" ] } `, `"x"`, `null`, `[]`}
	if s := raws[r.Intn(len(raws))]; s != "" {
		return []byte(s)
	}
	return nil
}

// filler fills objects with random content that reaches encoding/json's
// special cases: awkward strings, zero and non-zero times, quantities in
// every form, cached and not, both kinds of IntOrString, raw JSON.
func filler(source func(*randfill.Filler) *randfill.Filler) *randfill.Filler {
	return source(randfill.New()).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(s *string, c randfill.Continue) { *s = awkwardString(c.Rand) },
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.NewTime(randomTime(c.Rand)) },
		func(t *metav1.MicroTime, c randfill.Continue) { *t = metav1.NewMicroTime(randomTime(c.Rand)) },
		func(q *resource.Quantity, c randfill.Continue) { *q = randomQuantity(c.Rand) },
		func(is *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*is = intstr.FromInt32(c.Int31() - 1<<30)
			} else {
				*is = intstr.FromString(awkwardString(c.Rand))
			}
		},
		func(raw *runtime.RawExtension, c randfill.Continue) { raw.Raw = rawJSON(c.Rand) },
		func(o *runtime.Object, c randfill.Continue) {
			if c.Bool() {
				*o = &metav1.Status{Message: awkwardString(c.Rand), Code: c.Int31()}
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) { f.SetRawBytes(rawJSON(c.Rand)) },
	)
}

// TestBuiltInTypesSameAsEncodingJSON fills every built-in type with
// random content, 25 times each, and requires kubejson to write it as
// encoding/json does.
func TestBuiltInTypesSameAsEncodingJSON(t *testing.T) {
	var w Writer
	types := builtInTypes()
	if len(types) < 200 {
		t.Fatalf("the scheme knows only %d types", len(types))
	}
	for i, typ := range types {
		for seed := range 25 {
			f := filler(func(f *randfill.Filler) *randfill.Filler { return f.RandSource(rand.NewSource(int64(i*1000 + seed))) })
			obj := reflect.New(typ)
			f.Fill(obj.Interface())
			requireSame(t, &w, obj.Interface(), false)
		}
	}
}

// FuzzBuiltInTypes is the same comparison driven by the fuzzer: the first
// two bytes choose the type, the rest fill it.
//
//	go test -fuzz FuzzBuiltInTypes -fuzztime 2m ./internal/kubejson
func FuzzBuiltInTypes(f *testing.F) {
	var w Writer
	types := builtInTypes()
	f.Add([]byte{0, 0, 1, 2, 3})
	f.Add([]byte("\x01\x10Pod-like content <&> \xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		typ := types[(int(data[0])<<8|int(data[1]))%len(types)]
		obj := reflect.New(typ)
		filler(func(*randfill.Filler) *randfill.Filler { return randfill.NewFromGoFuzz(data[2:]) }).Fill(obj.Interface())
		requireSame(t, &w, obj.Interface(), false)
	})
}

// randomTree builds unstructured content as decoding JSON makes it.
func randomTree(r *rand.Rand, depth int) any {
	kinds := 6
	if depth > 0 {
		kinds = 8
	}
	switch r.Intn(kinds) {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return r.Int63() - r.Int63()
	case 3:
		floats := []float64{0, 1.5, -2.25e-7, 1e21, 123456789.125, math.SmallestNonzeroFloat64, r.NormFloat64() * 1e6}
		return floats[r.Intn(len(floats))]
	case 4, 5:
		return awkwardString(r)
	case 6:
		items := make([]any, r.Intn(4))
		if len(items) == 0 && r.Intn(2) == 0 {
			items = nil
		}
		for i := range items {
			items[i] = randomTree(r, depth-1)
		}
		return items
	default:
		m := map[string]any{}
		for range r.Intn(5) {
			m[awkwardString(r)] = randomTree(r, depth-1)
		}
		return m
	}
}

func randomUnstructured(r *rand.Rand) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for range r.Intn(6) {
		u.Object[awkwardString(r)] = randomTree(r, 4)
	}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	return u
}

func TestUnstructuredSameAsEncodingJSON(t *testing.T) {
	var w Writer
	r := rand.New(rand.NewSource(1))
	for range 5000 {
		requireSame(t, &w, randomUnstructured(r), false)
	}
}

// FuzzUnstructured: go test -fuzz FuzzUnstructured -fuzztime 2m ./internal/kubejson
func FuzzUnstructured(f *testing.F) {
	var w Writer
	f.Add(int64(1))
	f.Fuzz(func(t *testing.T, seed int64) {
		requireSame(t, &w, randomUnstructured(rand.New(rand.NewSource(seed))), false)
	})
}

// TestConcurrentAppend writes objects from several goroutines through one
// Writer, as the bridge's encode workers do; run with -race it checks the
// compiled encoders and the scratch space are shared safely.
func TestConcurrentAppend(t *testing.T) {
	var w Writer
	types := builtInTypes()
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			r := rand.New(rand.NewSource(int64(g)))
			for i := range 200 {
				obj := reflect.New(types[(g*7+i)%len(types)])
				filler(func(f *randfill.Filler) *randfill.Filler { return f.RandSource(r) }).Fill(obj.Interface())
				want, wantErr := encodingJSON(obj.Interface())
				got, err := w.Append(nil, obj.Interface())
				if wantErr == nil && (err != nil || string(got) != string(want)) {
					errs <- fmt.Errorf("%T: kubejson wrote %s (%v), encoding/json %s", obj.Interface(), got, err, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

package informers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiserverJSON is u as the apiserver serves a custom resource: what
// encoding/json writes for its tree.
func apiserverJSON(t testing.TB, u *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viaUnstructured is what the dynamic informer's transform caches for
// doc: the dynamic client's decoding, trims, then the compact form.
func viaUnstructured(t testing.TB, doc []byte, trims TransformOptions) runtime.Object {
	t.Helper()
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(doc, nil, nil)
	if err != nil {
		t.Fatalf("the Unstructured way: %v", err)
	}
	compact := func(u *unstructured.Unstructured) *Compact {
		out, err := compacting(trims.Transform(), widgets, nil)(u)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*Compact)
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return compact(o)
	case *unstructured.UnstructuredList:
		l := &CompactList{TypeMeta: metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()}}
		l.ResourceVersion, l.Continue = o.GetResourceVersion(), o.GetContinue()
		for i := range o.Items {
			l.Items = append(l.Items, compact(&o.Items[i]))
		}
		return l
	}
	t.Fatalf("decoded a %T", obj)
	return nil
}

// decodeBothWays decodes doc with a compactDecoder, checks that it got
// what the Unstructured way gets, and reports whether the decoder copied
// the JSON (rather than taking the Unstructured way itself).
func decodeBothWays(t *testing.T, doc []byte, trims TransformOptions) (copied bool) {
	t.Helper()
	d := newCompactDecoder(trims, widgets, nil)
	got, _, err := d.Decode(doc, nil, nil)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, doc)
	}
	want := viaUnstructured(t, doc, trims)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%#v\nwant (the Unstructured way)\n%#v\nfrom %s", got, want, doc)
	}
	_, err = d.copied(doc)
	return err == nil
}

func TestCompactDecoderCopiesWhatUnstructuredWrites(t *testing.T) {
	trims := TransformOptions{StripManagedFields: true, StripLastApplied: true}
	full := fullWidget()
	full.Object["spec"] = map[string]any{
		"nested": []any{map[string]any{"b": true, "a": nil}, []any{}, map[string]any{}, int64(-12), "x"},
		"quote":  "\"q\" \\ / \n\t\u0001 é 日本 \U0001F600",
		"ints":   []any{int64(0), int64(-1), int64(999999999999999999)},
	}
	bookmark := &unstructured.Unstructured{}
	bookmark.SetAPIVersion("example.com/v1")
	bookmark.SetKind("Widget")
	bookmark.SetResourceVersion("77")
	bookmark.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	onlyLastApplied := widget("a", "w3", "6")
	onlyLastApplied.SetAnnotations(map[string]string{LastAppliedAnnotation: "{}"})
	for name, u := range map[string]*unstructured.Unstructured{"full": full, "plain": widget("a", "w2", "5"), "bookmark": bookmark, "only the last-applied annotation": onlyLastApplied} {
		t.Run(name, func(t *testing.T) {
			if !decodeBothWays(t, apiserverJSON(t, u), trims) {
				t.Errorf("took the Unstructured way for JSON as encoding/json writes it")
			}
		})
	}
	t.Run("bookmark keeps its annotation", func(t *testing.T) {
		got, _, err := newCompactDecoder(trims, widgets, nil).Decode(apiserverJSON(t, bookmark), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := got.(*Compact); c.Annotations[metav1.InitialEventsAnnotationKey] != "true" || c.ResourceVersion != "77" {
			t.Errorf("bookmark decoded as %+v: the reflector would not see the end of the initial events", c.ObjectMeta)
		}
	})
	t.Run("list", func(t *testing.T) {
		items := []any{full.Object, widget("a", "w2", "5").Object}
		doc := apiserverJSON(t, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "WidgetList",
			"metadata": map[string]any{"resourceVersion": "90", "continue": "abc"}, "items": items,
		}})
		if !decodeBothWays(t, doc, trims) {
			t.Errorf("took the Unstructured way for a list as encoding/json writes it")
		}
	})
	t.Run("whitespace", func(t *testing.T) {
		// Dropped, as encoding/json writes none.
		var doc bytes.Buffer
		if err := json.Indent(&doc, apiserverJSON(t, full), "", "\t"); err != nil {
			t.Fatal(err)
		}
		if !decodeBothWays(t, doc.Bytes(), trims) {
			t.Errorf("took the Unstructured way")
		}
	})
	t.Run("no trims", func(t *testing.T) {
		doc := apiserverJSON(t, full)
		if !decodeBothWays(t, doc, TransformOptions{}) {
			t.Errorf("took the Unstructured way")
		}
	})
}

// What encoding/json would not write the same is decoded the Unstructured
// way, and so still comes out as it did before.
func TestCompactDecoderTakesTheUnstructuredWay(t *testing.T) {
	trims := TransformOptions{StripManagedFields: true, StripLastApplied: true, RedactSecrets: true}
	plain := string(apiserverJSON(t, widget("a", "w1", "5")))
	body := strings.TrimPrefix(plain, `{"apiVersion":"example.com/v1","kind":"Widget",`)
	for name, doc := range map[string]string{
		"unsorted keys":     `{"kind":"Widget","apiVersion":"example.com/v1",` + body,
		"escaped HTML key":  strings.Replace(plain, `"kind"`, `"a\u003cb":1,"kind"`, 1),
		"float":             strings.Replace(plain, `"kind"`, `"f":1.50,"kind"`, 1),
		"exponent":          strings.Replace(plain, `"kind"`, `"f":1e3,"kind"`, 1),
		"big integer":       strings.Replace(plain, `"kind"`, `"f":12345678901234567890,"kind"`, 1),
		"minus zero":        strings.Replace(plain, `"kind"`, `"f":-0,"kind"`, 1),
		"raw HTML":          strings.Replace(plain, `"kind"`, `"f":"<b>","kind"`, 1),
		"other escape":      strings.Replace(plain, `"kind"`, `"f":"\u0041\/","kind"`, 1),
		"line separator":    strings.Replace(plain, `"kind"`, "\"f\":\"a\u2028b\",\"kind\"", 1),
		"escaped key":       strings.Replace(plain, `"apiVersion"`, `"\u0041":1,"apiVersion"`, 1),
		"duplicate key":     strings.Replace(plain, `"kind":"Widget"`, `"kind":"Widget","kind":"Widget"`, 1),
		"item without kind": `{"apiVersion":"example.com/v1","items":[{"metadata":{"name":"x","namespace":"a"}}],"kind":"WidgetList","metadata":{"resourceVersion":"3"}}`,
		"secret":            `{"apiVersion":"v1","data":{"password":"aHVudGVyMg=="},"kind":"Secret","metadata":{"name":"db","namespace":"ns"}}`,
		"bad timestamp":     strings.Replace(plain, `"name"`, `"creationTimestamp":"yesterday","name"`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if decodeBothWays(t, []byte(doc), trims) {
				t.Errorf("copied JSON that encoding/json would not write the same: %s", doc)
			}
		})
	}
}

// A Status, as the apiserver sends one with an error, is decoded as a
// *metav1.Status: the REST client makes it the error the reflector reads
// (a 410 Gone asks for a new list).
func TestCompactDecoderDecodesStatus(t *testing.T) {
	doc := `{"apiVersion":"v1","code":410,"kind":"Status","message":"too old resource version: 1 (5)","metadata":{},"reason":"Expired","status":"Failure"}`
	got, _, err := newCompactDecoder(TransformOptions{}, widgets, nil).Decode([]byte(doc), &schema.GroupVersionKind{Version: "v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := got.(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
		t.Errorf("decoded %#v, want the Status", got)
	}
}

// The decoder checks JSON with jsontext as it copies it: garbage is an
// error, as it is to the dynamic client.
func TestCompactDecoderRefusesGarbage(t *testing.T) {
	for _, doc := range []string{``, `{`, `[1]`, `{"apiVersion":"example.com/v1","kind":"Widget"} x`} {
		if got, _, err := newCompactDecoder(TransformOptions{}, widgets, nil).Decode([]byte(doc), nil, nil); err == nil {
			t.Errorf("decoded %q into %#v", doc, got)
		}
	}
}

// FuzzCompactDecoder: whatever the input, the decoder gets what the
// Unstructured way gets, or fails where it fails.
func FuzzCompactDecoder(f *testing.F) {
	f.Add(apiserverJSON(f, fullWidget()))
	f.Add([]byte(`{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}],"kind":"WidgetList","metadata":{}}`))
	f.Add([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"},"name":"\u003c"},"n":[1,-2,3.5]}`))
	trims := TransformOptions{StripManagedFields: true, StripLastApplied: true}
	f.Fuzz(func(t *testing.T, doc []byte) {
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(doc, nil, nil)
		if err != nil {
			return
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetAPIVersion() == "v1" && u.GetKind() == "Status" {
			return
		}
		if l, ok := obj.(*unstructured.UnstructuredList); ok && l.GetKind() == "" {
			return
		}
		got, _, err := newCompactDecoder(trims, widgets, nil).Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if want := viaUnstructured(t, doc, trims); !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n%#v\nwant\n%#v", got, want)
		}
	})
}

// BenchmarkCompactDecoding times, on a Widget's JSON as a watch event
// carries it (2 KB of data, managed fields, labels), the decoder copying
// it into its compact form (copied) against the Unstructured way
// (unstructured: the dynamic client's decoding, the transform's trims,
// then encoding the compact form), in alternating order; the ratio is
// copied ÷ unstructured.
//
//	go test -run '^$' -bench CompactDecoding -count 6 ./pkg/informers
func BenchmarkCompactDecoding(b *testing.B) {
	u := widget("bench", "w-000123", "123456")
	u.SetUID("6f1c2a9e-1b6e-4c1e-9f51-2b1f0c2d9e11")
	u.SetLabels(map[string]string{"app": "bench"})
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)))
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "versus", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "example.com/v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:key-0":{},"f:key-1":{},"f:key-2":{},"f:key-3":{}}}`)}})
	data := map[string]any{}
	for i := range 4 {
		data[fmt.Sprintf("key-%d", i)] = strings.Repeat("abcdefgh", 64)
	}
	u.Object["data"] = data
	doc := apiserverJSON(b, u)
	d := newCompactDecoder(TransformOptions{StripManagedFields: true, StripLastApplied: true}, widgets, nil)
	if _, err := d.copied(doc); err != nil {
		b.Fatal(err)
	}
	var copied, unstr float64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ways := []func() (runtime.Object, error){
			func() (runtime.Object, error) { return d.copied(doc) },
			func() (runtime.Object, error) { o, _, err := d.unstructured(doc, nil); return o, err },
		}
		for j := range ways {
			k := (i + j) % 2
			start := time.Now()
			if _, err := ways[k](); err != nil {
				b.Fatal(err)
			}
			if took := float64(time.Since(start)); k == 0 {
				copied += took
			} else {
				unstr += took
			}
		}
	}
	b.ReportMetric(copied/float64(b.N), "copied-ns/op")
	b.ReportMetric(unstr/float64(b.N), "unstructured-ns/op")
	b.ReportMetric(copied/unstr, "copied/unstructured")
}

package encode_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// labelledWidget is gizmoWidget with labels, an annotation and data that
// encoding/json escapes ("<", "&", a quote, a non-ASCII rune).
func labelledWidget(rv, data string) *unstructured.Unstructured {
	u := gizmoWidget()
	u.SetResourceVersion(rv)
	u.SetLabels(map[string]string{"app": "gizmo"})
	u.SetAnnotations(map[string]string{"note": `a <b> & "c"`})
	u.Object["data"] = map[string]any{"key-0": data, "key-1": "é\u2028", "key-2": strings.Repeat("x", 1000)}
	return u
}

func compactOf(t *testing.T, u *unstructured.Unstructured) *informers.Compact {
	t.Helper()
	c, err := informers.NewCompact(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A compact object is encoded byte for byte as the object it was made
// from (a dynamic informer's Unstructured, a typed informer's Pod), in
// every event and data shape, and truncated alike when it does not fit
// (1,500 bytes: the headers fit, the objects do not).
func TestCompactEncodesAsItsObject(t *testing.T) {
	newPod, oldPod := fixtures.Pod(3, 78), fixtures.Pod(3, 77)
	newPod.Annotations = map[string]string{"note": `a <b> & "c" é`}
	oldPod.Status.Phase = "Pending"
	typed := func(o runtime.Object) *informers.Compact {
		c, err := informers.NewTypedCompact(o, "v1", "Pod")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, kind := range []struct {
		res            *informers.Resource
		newObj, oldObj runtime.Object
		compact        func(runtime.Object) *informers.Compact
	}{
		{widgets, labelledWidget("78", "new <value>"), labelledWidget("77", "old & value"), func(o runtime.Object) *informers.Compact {
			return compactOf(t, o.(*unstructured.Unstructured))
		}},
		{pods, newPod, oldPod, typed},
	} {
		encodeKind(t, kind.res, kind.newObj, kind.oldObj, kind.compact)
	}
}

// encodeKind checks that the compact forms of newObj and oldObj, objects
// of res, are encoded as they are.
func encodeKind(t *testing.T, res *informers.Resource, newObj, oldObj runtime.Object, compact func(runtime.Object) *informers.Compact) {
	t.Helper()
	changes := map[string]func(obj, old runtime.Object) informers.Change{
		"added": func(obj, _ runtime.Object) informers.Change {
			return informers.Change{Verb: informers.Added, Object: obj}
		},
		"deleted": func(obj, _ runtime.Object) informers.Change {
			return informers.Change{Verb: informers.Deleted, Object: obj}
		},
		"updated": func(obj, old runtime.Object) informers.Change {
			return informers.Change{Verb: informers.Updated, Object: obj, OldObject: old}
		},
		"snapshot": func(obj, _ runtime.Object) informers.Change {
			return informers.Change{Verb: informers.SnapshotItem, Object: obj, SnapshotID: "s1"}
		},
	}
	shapes := map[string]encode.UpdateData{"old object": {}, "patch": {Patch: true}, "patch only": {Patch: true, OmitOldObject: true}}
	for name, change := range changes {
		for shapeName, shape := range shapes {
			for _, maxPayload := range []int{0, 1500} {
				encodeOne := func(obj, old runtime.Object) encode.Encoded {
					e := newEncoder(maxPayload)
					e.Updates = map[*informers.Resource]encode.UpdateData{res: shape}
					c := change(obj, old)
					c.Resource, c.ObservedAt = res, observedAt
					out, err := e.Encode(c)
					if err != nil {
						t.Fatalf("%s, %s, max payload %d: %v", name, shapeName, maxPayload, err)
					}
					return out
				}
				want := encodeOne(newObj, oldObj)
				got := encodeOne(compact(newObj), compact(oldObj))
				if !sameData(t, got.Msg.Data, want.Msg.Data) || got.Truncated != want.Truncated {
					t.Errorf("%s %s, %s, max payload %d: compact data (truncated %v)\n%s\nwant (truncated %v)\n%s",
						res, name, shapeName, maxPayload, got.Truncated, got.Msg.Data, want.Truncated, want.Msg.Data)
				}
				for k, v := range want.Msg.Header {
					if g := got.Msg.Header.Values(k); len(g) != len(v) || (len(v) > 0 && g[0] != v[0]) {
						t.Errorf("%s, %s: header %s = %q, want %q", name, shapeName, k, g, v)
					}
				}
			}
		}
	}
}

// sameData reports whether two events' data are the same: byte for byte,
// or as long, with their objects byte for byte and their patches the same
// operations (jsonpatch
// lists them in the order of a map's iteration, which differs from run to
// run).
func sameData(t *testing.T, got, want []byte) bool {
	t.Helper()
	if bytes.Equal(got, want) {
		return true
	}
	if len(got) != len(want) {
		return false
	}
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if len(g) != len(w) {
		return false
	}
	for k, wv := range w {
		if k == "patch" {
			if !reflect.DeepEqual(sortedOps(t, g[k]), sortedOps(t, wv)) {
				return false
			}
			continue
		}
		if !bytes.Equal(g[k], wv) {
			return false
		}
	}
	return true
}

func sortedOps(t *testing.T, raw json.RawMessage) []map[string]any {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(raw, &ops); err != nil {
		t.Fatal(err)
	}
	sort.Slice(ops, func(i, j int) bool { return fmt.Sprint(ops[i]["path"]) < fmt.Sprint(ops[j]["path"]) })
	return ops
}

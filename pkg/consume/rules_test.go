package consume

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// The contract's 1.3 additions, as the reader sees them: updates with a
// patch and without the old object (§5, §14), objects entering match again
// (§12), and begin markers with the rules' scope (§1).

// withData is m with its data replaced.
func withData(m *nats.Msg, data string) *nats.Msg {
	out := &nats.Msg{Subject: m.Subject, Header: nats.Header{}, Data: []byte(data)}
	for k, v := range m.Header {
		out.Header[k] = slices.Clone(v)
	}
	return out
}

// objectOf is the "object" of a message's data, as published.
func objectOf(t *testing.T, m *nats.Msg) json.RawMessage {
	t.Helper()
	var d struct {
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(m.Data, &d); err != nil || len(d.Object) == 0 {
		t.Fatalf("data %s: %v", m.Data, err)
	}
	return d.Object
}

// jsonEqual reports whether two JSON texts are the same values.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// patched rewrites the update message upd as a type with patch: true,
// oldObject: false publishes it: its object and the patch only.
func patched(t *testing.T, upd *nats.Msg, patch string) *nats.Msg {
	t.Helper()
	return withData(upd, `{"object":`+string(objectOf(t, upd))+`,"patch":`+patch+`}`)
}

func TestDecodePatchWithoutOldObject(t *testing.T) {
	const cmPatch = `[{"op":"replace","path":"/metadata/resourceVersion","value":"11"},{"op":"replace","path":"/data/rv","value":"11"},` +
		`{"op":"add","path":"/data/a~1b","value":"x"}]`
	const widgetPatch = `[{"op":"replace","path":"/metadata/resourceVersion","value":"21"},{"op":"remove","path":"/spec/size"},` +
		`{"op":"add","path":"/spec/color","value":"blue"}]`
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	next := cm("ns", "a", "u1", "11")
	next.Data["a/b"] = "x"
	f.updated(next, cm("ns", "a", "u1", "10"))
	widget := func(rv string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": "ns", "name": "w", "uid": "u2", "resourceVersion": rv}, "spec": spec}}
	}
	f.changeOf(widgets, informers.Added, widget("20", map[string]any{"size": int64(3)}), nil)
	f.changeOf(widgets, informers.Updated, widget("21", map[string]any{"color": "blue"}), widget("20", map[string]any{"size": int64(3)}))
	c := memClient(t)

	for _, tc := range []struct {
		name     string
		prev     *nats.Msg
		upd      *nats.Msg
		patch    string
		wantType any
	}{
		{"typed", f.msgs[0], patched(t, f.msgs[1], cmPatch), cmPatch, &corev1.ConfigMap{}},
		{"unstructured", f.msgs[2], patched(t, f.msgs[3], widgetPatch), widgetPatch, &unstructured.Unstructured{}},
	} {
		ev, err := c.Decode(5, tc.upd)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ev.Verb != Updated || ev.OldObject != nil || reflect.TypeOf(ev.Object) != reflect.TypeOf(tc.wantType) {
			t.Errorf("%s: verb %s, object %T, old object %v", tc.name, ev.Verb, ev.Object, ev.OldObject)
		}
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			if c, _, _ := unstructured.NestedString(u.Object, "spec", "color"); c != "blue" || u.GetResourceVersion() != "21" {
				t.Errorf("%s: object %v", tc.name, u.Object)
			}
		}
		if !jsonEqual(t, ev.Patch, []byte(tc.patch)) {
			t.Errorf("%s: Patch %s, want %s", tc.name, ev.Patch, tc.patch)
		}
		// Applied to the object as last published, the patch gives the
		// object the update publishes.
		p, err := jsonpatch.DecodePatch(ev.Patch)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := p.Apply(objectOf(t, tc.prev))
		if err != nil {
			t.Fatalf("%s: apply: %v", tc.name, err)
		}
		if want := objectOf(t, tc.upd); !jsonEqual(t, got, want) {
			t.Errorf("%s: the patched object\n%s\nis not the published one\n%s", tc.name, got, want)
		}
	}

	// An update as 1.2 published it has no patch.
	if ev, err := c.Decode(2, f.msgs[1]); err != nil || ev.Patch != nil || ev.OldObject == nil {
		t.Errorf("an update without a patch: Patch %s, OldObject %v, %v", ev.Patch, ev.OldObject, err)
	}
	// Both: the patch turns oldObject into object.
	var both map[string]json.RawMessage
	if err := json.Unmarshal(f.msgs[1].Data, &both); err != nil {
		t.Fatal(err)
	}
	both["patch"] = json.RawMessage(cmPatch)
	data, err := json.Marshal(both)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.Decode(2, withData(f.msgs[1], string(data)))
	if err != nil || ev.OldObject.(*corev1.ConfigMap).ResourceVersion != "10" || !jsonEqual(t, ev.Patch, []byte(cmPatch)) {
		t.Errorf("an update with both: Patch %s, OldObject %v, %v", ev.Patch, ev.OldObject, err)
	}

	// The Applier keeps its state from the object alone.
	a, vs, rec := newTestApplier(t)
	for i, m := range []*nats.Msg{f.msgs[0], patched(t, f.msgs[1], cmPatch)} {
		if err := a.ApplyMsg(uint64(i+1), m); err != nil {
			t.Fatal(err)
		}
	}
	a.EndInitialList()
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@11"}) || len(*vs) != 0 {
		t.Errorf("held %v, violations %v", got, *vs)
	}
	if o, ok, _ := a.Indexer("configmaps").GetByKey("ns/a"); !ok || o.(*corev1.ConfigMap).Data["a/b"] != "x" {
		t.Errorf("held %+v", o)
	}
	if len(rec.calls) != 1 {
		t.Errorf("handler calls %v", rec.calls)
	}
}

func TestDecodePatchErrors(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	f.updated(cm("ns", "a", "u1", "11"), cm("ns", "a", "u1", "10"))
	c := memClient(t)
	obj := string(objectOf(t, f.msgs[0]))
	cases := map[string]*nats.Msg{
		"patch on added":  withData(f.msgs[0], `{"object":`+obj+`,"patch":[]}`),
		"patch not array": withData(f.msgs[1], `{"object":`+string(objectOf(t, f.msgs[1]))+`,"patch":{"op":"add"}}`),
		"patch not JSON":  withData(f.msgs[1], `{"object":`+string(objectOf(t, f.msgs[1]))+`,"patch":[}`),
		"patch a string":  withData(f.msgs[1], `{"object":`+string(objectOf(t, f.msgs[1]))+`,"patch":"[]"}`),
	}
	for name, m := range cases {
		_, err := c.Decode(5, m)
		if !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// null is no patch.
	if ev, err := c.Decode(5, withData(f.msgs[1], `{"object":`+string(objectOf(t, f.msgs[1]))+`,"patch":null}`)); err != nil || ev.Patch != nil {
		t.Errorf("patch null: %s, %v", ev.Patch, err)
	}
}

// An object that leaves match is deleted; one that enters it again comes
// back as added, with its uid and a newer resourceVersion (contract §12).
func TestApplierObjectEntersMatchAgain(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "a", "u1", "10"))
	f.deleted(cm("ns", "a", "u1", "12")) // left match
	f.added(cm("ns", "a", "u1", "15"))   // entered it again
	f.updated(cm("ns", "a", "u1", "16"), cm("ns", "a", "u1", "15"))
	f.deleted(cm("ns", "a", "u1", "17")) // left again
	f.begin("s1")
	f.item("s1", cm("ns", "a", "u1", "17")) // at its delete's version: a regression
	f.item("s1", cm("ns", "b", "u2", "5"))
	f.end("s1", 2)
	a, vs, rec := newTestApplier(t)
	a.EndInitialList()
	applyAll(t, a, f)
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{Regression}) {
		t.Fatalf("violations %v", *vs)
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/b@5"}) {
		t.Errorf("held %v", got)
	}
	want := []string{"add ns/a@10 initial=false", "delete ns/a@12", "add ns/a@15 initial=false", "update ns/a@15 -> ns/a@16", "delete ns/a@17", "add ns/b@5 initial=false"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("handler calls\n%q\nwant\n%q", rec.calls, want)
	}
}

func TestDecodeRulesScope(t *testing.T) {
	f := newFab(t, &memStore{})
	f.begin("s1")
	c := memClient(t)
	marker := func(ext map[string]string) *nats.Msg {
		m := withData(f.msgs[0], "")
		m.Data = nil
		for k, v := range ext {
			m.Header.Set(contract.Header(k), v)
		}
		return m
	}
	ev, err := c.Decode(1, f.msgs[0])
	if err != nil || !ev.Scope.IsZero() {
		t.Fatalf("a begin marker without a scope: %+v, %v", ev.Scope, err)
	}
	const match = "object.metadata.labels['tier'] == 'frontend'"
	ev, err = c.Decode(1, marker(map[string]string{contract.ExtScopeMatch: match,
		contract.ExtScopeIgnoreFields: `[["status"],["metadata","annotations","example.com/heartbeat"]]`}))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}}
	if ev.Scope.Match != match || !reflect.DeepEqual(ev.Scope.IgnoreFields, want) || ev.Scope.IsZero() {
		t.Errorf("scope %+v", ev.Scope)
	}
	for _, s := range []Scope{{Match: "true"}, {IgnoreFields: [][]string{{"status"}}}} {
		if s.IsZero() {
			t.Errorf("%+v is zero", s)
		}
	}

	// The Applier says the scope of the last begin marker.
	a, vs, _ := newTestApplier(t)
	if err := a.ApplyMsg(1, marker(map[string]string{contract.ExtScopeMatch: match, contract.ExtScopeIgnoreFields: `[["status"]]`})); err != nil {
		t.Fatal(err)
	}
	if s, ok := a.Scope("configmaps"); !ok || s.Match != match || !reflect.DeepEqual(s.IgnoreFields, [][]string{{"status"}}) || len(*vs) != 0 {
		t.Errorf("Scope() = %+v, %v; violations %v", s, ok, *vs)
	}

	for _, bad := range []string{`status`, `["status"]`, `[["status"],[]]`, `[[1]]`, `{}`} {
		_, err := c.Decode(7, marker(map[string]string{contract.ExtScopeIgnoreFields: bad}))
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrUndecodable) || de.Seq != 7 {
			t.Errorf("%s %q: %v", contract.ExtScopeIgnoreFields, bad, err)
		}
	}
	// Like any undecodable marker, the Applier reports it and goes on.
	if err := a.ApplyMsg(2, marker(map[string]string{contract.ExtScopeIgnoreFields: `[[]]`})); err != nil {
		t.Fatal(err)
	}
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{Undecodable}) {
		t.Errorf("violations %v", *vs)
	}
}

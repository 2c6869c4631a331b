package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// change is what the test knows about one change from the API: the
// object's uid and the resourceVersions before and after.
type change struct {
	verb    string // added, updated, deleted
	uid     string
	rv      string
	oldRV   string
	content func(t *testing.T, obj map[string]any) // checks the object's content
	old     func(t *testing.T, obj map[string]any) // checks oldObject's content
}

// objectKind is what every event of one type carries.
type objectKind struct {
	apiVersion, kind string
	source           string // ce-source
	resource         string // the id's <resource>.<version>[.<group>]
}

// TestObjectEvents creates, updates and deletes a ConfigMap and a custom
// resource whose CRD was created at run time, and checks every attribute,
// subject, id and the data of the three events of each.
func TestObjectEvents(t *testing.T) {
	h := newHarness(t)
	h.ensureWidgetCRD()

	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps; widgets.example.com"})
	cmType, wType := h.cmType(), h.typeSubject("example.com", "v1", "widgets")
	if got := cmType; got != h.prefix+".e2e.core.v1.configmaps" {
		t.Fatalf("test bug: configmap type subject %s", got)
	}
	if wType != h.prefix+".e2e.example_com.v1.widgets" {
		t.Fatalf("test bug: widget type subject %s", wType)
	}
	if n := b.countLog(`"Watching"`); n != 2 {
		t.Errorf("bridge logged %d \"Watching\" lines, want 2 (configmaps and widgets)", n)
	}

	// The namespace is empty: each type's start-up snapshot has no items.
	msgs := h.waitStream("both start-up snapshots", 30*time.Second, func(m []replay.Message) string {
		for _, typ := range []string{cmType, wType} {
			if len(ofType(m, contract.TypeSnapshotEnd, typ+".")) == 0 {
				return "no end marker on " + typ
			}
		}
		return ""
	})
	for _, typ := range []string{cmType, wType} {
		begins, ends := ofType(msgs, contract.TypeSnapshotBegin, typ+"."), ofType(msgs, contract.TypeSnapshotEnd, typ+".")
		if len(begins) != 1 || len(ends) != 1 || begins[0].Subject != typ+"._snapshot.begin" || ends[0].Subject != typ+"._snapshot.end" {
			t.Errorf("%s: start-up markers:\n%s", typ, describe(msgs))
			continue
		}
		if got := ends[0].Ext(contract.ExtSnapshotCount); got != "0" {
			t.Errorf("%s: snapshotcount %q for an empty namespace, want 0", typ, got)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// ---- ConfigMap ----
	cm := h.createCM(h.ns, "cfg", nil, map[string]string{"k": "v1"})
	if len(cm.ManagedFields) == 0 {
		t.Fatal("the apiserver returned no managedFields; the check that the bridge strips them would prove nothing")
	}
	cmWatch, err := h.cs.CoreV1().ConfigMaps(h.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=cfg"})
	if err != nil {
		t.Fatal(err)
	}
	defer cmWatch.Stop()
	// Each change waits for the previous one's event, so none is merged
	// into another (see waitEvent).
	cmSubj := h.prefix + ".e2e.core.v1.configmaps." + h.ns + ".cfg"
	h.waitEvent(cmSubj, contract.TypeAdded, cm.ResourceVersion)
	cm2 := cm.DeepCopy()
	cm2.Data["k"] = "v2"
	cm2 = h.updateCM(cm2)
	h.waitEvent(cmSubj, contract.TypeUpdated, cm2.ResourceVersion)
	h.deleteCM(h.ns, "cfg")
	cmDeletedRV := deletionRV(t, cmWatch)

	cmData := func(want string) func(*testing.T, map[string]any) {
		return func(t *testing.T, obj map[string]any) {
			t.Helper()
			if got, _, _ := unstructured.NestedString(obj, "data", "k"); got != want {
				t.Errorf("data.k = %q, want %q", got, want)
			}
		}
	}
	cmUID := string(cm.UID)
	cmChanges := []change{
		{verb: "added", uid: cmUID, rv: cm.ResourceVersion, content: cmData("v1")},
		{verb: "updated", uid: cmUID, rv: cm2.ResourceVersion, oldRV: cm.ResourceVersion, content: cmData("v2"), old: cmData("v1")},
		{verb: "deleted", uid: cmUID, rv: cmDeletedRV, content: cmData("v2")},
	}

	// ---- Widget ----
	widgets := h.dyn.Resource(widgetGVR).Namespace(h.ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "blue"},
		"spec":     map[string]any{"color": "blue", "size": int64(3)},
	}}
	w, err = widgets.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if len(w.GetManagedFields()) == 0 {
		t.Fatal("the apiserver returned no managedFields for the widget")
	}
	wWatch, err := widgets.Watch(ctx, metav1.ListOptions{ResourceVersion: w.GetResourceVersion(), FieldSelector: "metadata.name=blue"})
	if err != nil {
		t.Fatal(err)
	}
	defer wWatch.Stop()
	wSubj := h.prefix + ".e2e.example_com.v1.widgets." + h.ns + ".blue"
	h.waitEvent(wSubj, contract.TypeAdded, w.GetResourceVersion())
	w2 := w.DeepCopy()
	if err := unstructured.SetNestedField(w2.Object, "red", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	w2, err = widgets.Update(ctx, w2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update widget: %v", err)
	}
	h.waitEvent(wSubj, contract.TypeUpdated, w2.GetResourceVersion())
	if err := widgets.Delete(ctx, "blue", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete widget: %v", err)
	}
	wDeletedRV := deletionRV(t, wWatch)

	color := func(want string) func(*testing.T, map[string]any) {
		return func(t *testing.T, obj map[string]any) {
			t.Helper()
			if got, _, _ := unstructured.NestedString(obj, "spec", "color"); got != want {
				t.Errorf("spec.color = %q, want %q", got, want)
			}
			// Numbers decode as float64 from JSON.
			if got, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "size"); fmt.Sprint(got) != "3" {
				t.Errorf("spec.size = %v, want 3", got)
			}
		}
	}
	wUID := string(w.GetUID())
	wChanges := []change{
		{verb: "added", uid: wUID, rv: w.GetResourceVersion(), content: color("blue")},
		{verb: "updated", uid: wUID, rv: w2.GetResourceVersion(), oldRV: w.GetResourceVersion(), content: color("red"), old: color("blue")},
		{verb: "deleted", uid: wUID, rv: wDeletedRV, content: color("red")},
	}

	msgs = h.waitStream("the deletes of cfg and blue", 30*time.Second, func(m []replay.Message) string {
		for _, s := range []string{cmSubj, wSubj} {
			if len(ofType(onSubject(m, s), contract.TypeDeleted, "")) == 0 {
				return "no deleted event on " + s
			}
		}
		return ""
	})

	t.Run("ConfigMap", func(t *testing.T) {
		checkChanges(t, msgs, cmSubj, h.ns, "cfg", objectKind{"v1", "ConfigMap", "k8s://e2e/api/v1/namespaces/" + h.ns + "/configmaps", "configmaps.v1"}, cmChanges)
	})
	t.Run("Widget", func(t *testing.T) {
		checkChanges(t, msgs, wSubj, h.ns, "blue", objectKind{"example.com/v1", "Widget", "k8s://e2e/apis/example.com/v1/namespaces/" + h.ns + "/widgets", "widgets.v1.example.com"}, wChanges)
	})
	// Nothing else was published: the term marker, markers of the start-up
	// snapshots and the six events.
	if len(msgs) != 1+4+6 {
		t.Errorf("stream holds %d messages, want 11 (the term marker, 4 snapshot markers, 6 events):\n%s", len(msgs), describe(msgs))
	}
	checkUniqueIDs(t, msgs)
	st := h.applyAll(t, msgs)
	checkNoRegressions(t, st)
	if len(st.Objects) != 0 {
		t.Errorf("replayed state is not empty after the deletes: %v", st.Objects)
	}
}

// deletionRV reads the DELETED event from w and returns its
// resourceVersion: the revision of the delete, which is what a watch (and
// so the bridge) reports for the deleted object.
func deletionRV(t *testing.T, w watch.Interface) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed before the DELETED event")
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			if ev.Type != watch.Deleted {
				continue
			}
			m, err := meta(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			return m.GetResourceVersion()
		case <-timeout:
			t.Fatal("no DELETED event from the watch within 30s")
		}
	}
}

// checkChanges checks the events on one object's subject against the
// changes made through the API, in order.
func checkChanges(t *testing.T, msgs []replay.Message, subject, ns, name string, k objectKind, want []change) {
	got := onSubject(msgs, subject)
	if len(got) != len(want) {
		t.Fatalf("%d events on %s, want %d:\n%s", len(got), subject, len(want), describe(msgs))
	}
	for i, w := range want {
		m := got[i]
		t.Run(w.verb, func(t *testing.T) {
			ev := m.Event
			if err := ev.Validate(); err != nil {
				t.Errorf("not a valid CloudEvent: %v", err)
			}
			checkEq(t, "specversion", ev.SpecVersion(), "1.0")
			checkEq(t, "type", ev.Type(), "io.kubebridge.object."+w.verb)
			wantID := termID(objectID(k.resource, w.uid, w.rv, w.verb), m)
			checkEq(t, "id", ev.ID(), wantID)
			checkEq(t, "Nats-Msg-Id", m.Header.Get("Nats-Msg-Id"), "e2e/"+wantID)
			checkEq(t, "subject", ev.Subject(), ns+"/"+name)
			checkEq(t, "source", ev.Source(), k.source)
			checkEq(t, "datacontenttype", ev.DataContentType(), "application/json")
			checkEq(t, "Content-Type header", m.Header.Get("Content-Type"), "application/json")
			if ev.Time().IsZero() || time.Since(ev.Time()) > 10*time.Minute {
				t.Errorf("time = %v", ev.Time())
			}
			for ext, v := range map[string]string{
				"cluster": cluster, "kind": k.kind, "apiversion": k.apiVersion, "namespace": ns, "name": name,
				"uid": w.uid, "resourceversion": w.rv,
			} {
				checkEq(t, "extension "+ext, m.Ext(ext), v)
			}
			for _, absent := range []string{"finalstateunknown", "truncated", "snapshotid"} {
				if v, ok := ev.Extensions()[absent]; ok {
					t.Errorf("extension %s = %v, want absent", absent, v)
				}
			}

			var data map[string]map[string]any
			if err := json.Unmarshal(m.Data, &data); err != nil {
				t.Fatalf("data is not a JSON object of objects: %v\n%s", err, m.Data)
			}
			var keys []string
			for key := range data {
				keys = append(keys, key)
			}
			slices.Sort(keys)
			wantKeys := []string{"object"}
			if w.oldRV != "" {
				wantKeys = []string{"object", "oldObject"}
			}
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("data has %v, want %v", keys, wantKeys)
			}
			checkObject(t, "object", data["object"], k, ns, name, w.uid, w.rv, w.content)
			if w.oldRV != "" {
				checkObject(t, "oldObject", data["oldObject"], k, ns, name, w.uid, w.oldRV, w.old)
			}
		})
	}
}

func checkObject(t *testing.T, what string, obj map[string]any, k objectKind, ns, name, uid, rv string, content func(*testing.T, map[string]any)) {
	t.Helper()
	if obj == nil {
		t.Errorf("%s missing", what)
		return
	}
	u := unstructured.Unstructured{Object: obj}
	checkEq(t, what+".apiVersion", u.GetAPIVersion(), k.apiVersion)
	checkEq(t, what+".kind", u.GetKind(), k.kind)
	checkEq(t, what+".metadata.namespace", u.GetNamespace(), ns)
	checkEq(t, what+".metadata.name", u.GetName(), name)
	checkEq(t, what+".metadata.uid", string(u.GetUID()), uid)
	checkEq(t, what+".metadata.resourceVersion", u.GetResourceVersion(), rv)
	if _, ok, _ := unstructured.NestedFieldNoCopy(obj, "metadata", "managedFields"); ok {
		t.Errorf("%s.metadata.managedFields present; the bridge strips them by default", what)
	}
	if content != nil {
		t.Run(what, func(t *testing.T) { content(t, obj) })
	}
}

func checkEq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// ensureWidgetCRD creates widgets.example.com (namespaced, v1, any
// content) with the dynamic client unless it exists, and waits until it is
// Established and served by discovery.
func (h *harness) ensureWidgetCRD() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crd := fixtures.WidgetCRD()
	crds := h.dyn.Resource(crdGVR)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatalf("create CRD: %v", err)
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
		last = err
		return err == nil && established(got), nil
	})
	if err != nil {
		h.t.Fatalf("CRD widgets.example.com not Established within a minute (last error: %v)", last)
	}
	if err := fixtures.WaitForWidgets(ctx, h.cs.Discovery()); err != nil {
		h.t.Fatal(err)
	}
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// meta returns the object metadata of a typed or unstructured object.
func meta(obj any) (metav1.Object, error) {
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, fmt.Errorf("%T has no object metadata", obj)
}

package informers

// Internal test: besides running real informers against client-go's fake
// clients, it calls Source.handler() directly to feed it values a fake API
// server cannot produce (equal-version updates delivered out of band,
// tombstones, values that are not objects).

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/recorder"
)

var (
	configMaps   = &Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	clusterRoles = &Resource{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole"}
	widgets      = &Resource{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}

	pinned = time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
)

func pinnedClock() time.Time { return pinned }

// recordQueue accepts and records every change.
type recordQueue struct{ recorder.Log[Change] }

func (q *recordQueue) Add(c Change) { q.Append(c) }

func (q *recordQueue) snapshot() []Change { return q.All() }

// waitFor polls until cond holds for the recorded changes and returns them.
func (q *recordQueue) waitFor(t *testing.T, what string, cond func([]Change) bool) []Change {
	t.Helper()
	var cs []Change
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		cs = q.snapshot()
		return cond(cs), nil
	})
	if err != nil {
		t.Fatalf("timed out after 15s waiting for %s; recorded: %s", what, describe(cs))
	}
	return cs
}

func key(o runtime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("<%T>", o)
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func rv(o runtime.Object) string {
	if o == nil {
		return "<nil>"
	}
	return metaOf(o).GetResourceVersion()
}

func describe(cs []Change) string {
	s := "["
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += string(c.Verb)
		if c.Object != nil {
			s += " " + key(c.Object) + "@" + rv(c.Object)
		}
		if c.OldObject != nil {
			s += " (old @" + rv(c.OldObject) + ")"
		}
	}
	return s + "]"
}

func hasChange(verb Verb, k string) func([]Change) bool {
	return func(cs []Change) bool {
		return slices.ContainsFunc(cs, func(c Change) bool { return c.Verb == verb && c.Object != nil && key(c.Object) == k })
	}
}

func cm(ns, name, resourceVersion string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: resourceVersion},
		Data:       map[string]string{"v": resourceVersion},
	}
}

// startSource builds a Source, runs it until the test ends and waits for
// its initial list.
func startSource(t *testing.T, clients Clients, res *Resource, scope Scope, transform cache.TransformFunc, q Queue, opts ...SourceOption) *Source {
	t.Helper()
	s, err := NewSource(clients, res, scope, transform, q, append([]SourceOption{WithClock(pinnedClock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Run(ctx)
	syncCtx, syncCancel := context.WithTimeout(ctx, 15*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), s.HasSynced) {
		t.Fatalf("%s: informers did not sync", res)
	}
	return s
}

func listKeys(s *Source) []string {
	var keys []string
	for _, o := range s.List() {
		keys = append(keys, key(o))
	}
	sort.Strings(keys)
	return keys
}

func TestSourceAddedOnlyAfterInitialList(t *testing.T) {
	cs := fake.NewClientset(cm("a", "pre1", "1"), cm("a", "pre2", "2"))
	q := &recordQueue{}
	s := startSource(t, Clients{Typed: cs}, configMaps, Scope{}, nil, q)
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"a/pre1", "a/pre2"}) {
		t.Fatalf("List() = %v", got)
	}

	if _, err := cs.CoreV1().ConfigMaps("a").Create(context.Background(), cm("a", "post", "3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Handler callbacks are delivered in order: once the add of "post" is
	// seen, any add of the initial list would have been seen before it.
	got := q.waitFor(t, "added a/post", hasChange(Added, "a/post"))
	if len(got) != 1 {
		t.Fatalf("changes = %s, want only the add of a/post", describe(got))
	}
	c := got[0]
	if c.Resource != configMaps {
		t.Errorf("Resource = %v, want the Source's own %v", c.Resource, configMaps)
	}
	if !c.ObservedAt.Equal(pinned) {
		t.Errorf("ObservedAt = %v, want the pinned clock %v", c.ObservedAt, pinned)
	}
	obj, ok := c.Object.(*corev1.ConfigMap)
	if !ok || obj.Data["v"] != "3" {
		t.Errorf("Object = %#v, want the created configmap", c.Object)
	}
	if c.OldObject != nil || c.FinalStateUnknown || c.SnapshotID != "" {
		t.Errorf("unexpected fields set on an add: %+v", c)
	}
}

func TestSourceUpdates(t *testing.T) {
	cs := fake.NewClientset(cm("a", "x", "1"))
	q := &recordQueue{}
	startSource(t, Clients{Typed: cs}, configMaps, Scope{}, nil, q)
	ctx := context.Background()
	update := func(resourceVersion, value string) {
		t.Helper()
		o := cm("a", "x", resourceVersion)
		o.Data["v"] = value
		if _, err := cs.CoreV1().ConfigMaps("a").Update(ctx, o, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The fake tracker stores objects as given: it does not bump
	// resourceVersion, so each update carries its own.
	update("2", "two")
	update("2", "two again") // same version: resync or relist noise
	update("3", "three")
	got := q.waitFor(t, "update to rv 3", func(cs []Change) bool {
		return slices.ContainsFunc(cs, func(c Change) bool { return c.Verb == Updated && rv(c.Object) == "3" })
	})
	if len(got) != 2 {
		t.Fatalf("changes = %s, want updates 1->2 and 2->3 only", describe(got))
	}
	for i, want := range [][2]string{{"1", "2"}, {"2", "3"}} {
		c := got[i]
		if c.Verb != Updated || rv(c.OldObject) != want[0] || rv(c.Object) != want[1] {
			t.Errorf("change %d = %s, want updated @%s (old @%s)", i, describe(got[i:i+1]), want[1], want[0])
		}
		if c.Resource != configMaps || !c.ObservedAt.Equal(pinned) {
			t.Errorf("change %d: Resource %v, ObservedAt %v", i, c.Resource, c.ObservedAt)
		}
	}
	// The update that is offered carries the state before the equal-version
	// update, not after.
	if v := got[1].OldObject.(*corev1.ConfigMap).Data["v"]; v != "two again" {
		t.Errorf("OldObject of the 2->3 update has data %q, want the cache's last state %q", v, "two again")
	}
	if v := got[0].Object.(*corev1.ConfigMap).Data["v"]; v != "two" {
		t.Errorf("Object of the 1->2 update has data %q", v)
	}
}

func TestSourceHandlerUpdateEdgeCases(t *testing.T) {
	q := &recordQueue{}
	s, err := NewSource(Clients{Typed: fake.NewClientset()}, configMaps, Scope{}, nil, q, WithClock(pinnedClock))
	if err != nil {
		t.Fatal(err)
	}
	h := s.handler()
	h.OnUpdate(cm("a", "x", "5"), cm("a", "x", "5"))
	h.OnUpdate(cm("a", "x", ""), cm("a", "x", ""))
	h.OnUpdate("not an object", cm("a", "x", "6"))
	h.OnUpdate(cm("a", "x", "6"), "not an object")
	h.OnUpdate(&metav1.Status{}, cm("a", "x", "6")) // an object without metadata
	h.OnUpdate(nil, nil)
	if got := q.snapshot(); len(got) != 0 {
		t.Fatalf("changes = %s, want none", describe(got))
	}
	old, cur := cm("a", "x", "5"), cm("a", "x", "6")
	h.OnUpdate(old, cur)
	got := q.snapshot()
	if len(got) != 1 || got[0].Verb != Updated || got[0].Object != cur || got[0].OldObject != old {
		t.Fatalf("changes = %s, want updated @6 (old @5) with the handler's own objects", describe(got))
	}
}

func TestSourceDeletes(t *testing.T) {
	cs := fake.NewClientset(cm("a", "x", "1"))
	q := &recordQueue{}
	s := startSource(t, Clients{Typed: cs}, configMaps, Scope{}, nil, q)
	if err := cs.CoreV1().ConfigMaps("a").Delete(context.Background(), "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := q.waitFor(t, "delete of a/x", hasChange(Deleted, "a/x"))
	if len(got) != 1 {
		t.Fatalf("changes = %s", describe(got))
	}
	c := got[0]
	if o, ok := c.Object.(*corev1.ConfigMap); !ok || o.Data["v"] != "1" {
		t.Errorf("Object = %#v, want the last state of a/x", c.Object)
	}
	if c.FinalStateUnknown || c.OldObject != nil || c.Resource != configMaps || !c.ObservedAt.Equal(pinned) {
		t.Errorf("unexpected delete: %+v", c)
	}
	if keys := listKeys(s); len(keys) != 0 {
		t.Errorf("List() after the delete = %v", keys)
	}
}

func TestSourceHandlerDeleteTombstones(t *testing.T) {
	q := &recordQueue{}
	s, err := NewSource(Clients{Typed: fake.NewClientset()}, configMaps, Scope{}, nil, q, WithClock(pinnedClock))
	if err != nil {
		t.Fatal(err)
	}
	h := s.handler()

	last := cm("a", "x", "7")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/x", Obj: last})
	got := q.snapshot()
	if len(got) != 1 {
		t.Fatalf("changes = %s, want one delete", describe(got))
	}
	if c := got[0]; c.Verb != Deleted || !c.FinalStateUnknown || c.Object != last || c.Resource != configMaps || !c.ObservedAt.Equal(pinned) {
		t.Errorf("tombstone delete = %+v, want Deleted with FinalStateUnknown and the tombstone's object", c)
	}

	// Nothing of these is an object: skipped, never a panic.
	for _, v := range []interface{}{
		cache.DeletedFinalStateUnknown{Key: "a/y", Obj: "not an object"},
		cache.DeletedFinalStateUnknown{Key: "a/y"},
		cache.DeletedFinalStateUnknown{Key: "a/y", Obj: &metav1.Status{}},
		&cache.DeletedFinalStateUnknown{Key: "a/y", Obj: last},
		"not an object",
		nil,
		&metav1.Status{},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("OnDelete(%#v) panicked: %v", v, r)
				}
			}()
			h.OnDelete(v)
			h.OnAdd(v, false)
		}()
	}
	if got := q.snapshot(); len(got) != 1 {
		t.Errorf("changes = %s, want only the first delete", describe(got))
	}

	// A plain delete is not marked as inferred.
	h.OnDelete(cm("a", "z", "8"))
	got = q.snapshot()
	if c := got[len(got)-1]; c.Verb != Deleted || c.FinalStateUnknown || key(c.Object) != "a/z" {
		t.Errorf("plain delete = %+v", c)
	}
}

// TestSourceSplitsUIDChange: a relist that finds a name deleted and created
// again reports OnUpdate(old, new) with different uids. The Source turns it
// into the old object's delete (final state unknown) and the new one's add.
func TestSourceSplitsUIDChange(t *testing.T) {
	q := &recordQueue{}
	s, err := NewSource(Clients{Typed: fake.NewClientset()}, configMaps, Scope{}, nil, q, WithClock(pinnedClock))
	if err != nil {
		t.Fatal(err)
	}
	old, recreated := cm("a", "x", "5"), cm("a", "x", "9")
	old.UID, recreated.UID = "uid-old", "uid-new"
	s.handler().OnUpdate(old, recreated)
	got := q.snapshot()
	if len(got) != 2 {
		t.Fatalf("changes = %s, want a delete and an add", describe(got))
	}
	if c := got[0]; c.Verb != Deleted || !c.FinalStateUnknown || c.Object != old || c.OldObject != nil {
		t.Errorf("first change = %+v, want deleted(old uid, final state unknown)", c)
	}
	if c := got[1]; c.Verb != Added || c.Object != recreated || c.OldObject != nil || c.FinalStateUnknown {
		t.Errorf("second change = %+v, want added(new uid)", c)
	}
	for _, c := range got {
		if c.Resource != configMaps || !c.ObservedAt.Equal(pinned) {
			t.Errorf("change %s: resource %v, observed %v", c.Verb, c.Resource, c.ObservedAt)
		}
	}

	// Same uid, new version: one update.
	next := cm("a", "x", "10")
	next.UID = "uid-new"
	s.handler().OnUpdate(recreated, next)
	if got := q.snapshot(); len(got) != 3 || got[2].Verb != Updated || got[2].OldObject != recreated {
		t.Errorf("same-uid update = %s", describe(got))
	}
}

// TestSourceKeysAndGet: the lazy snapshot feed lists keys, then reads each
// object when its turn comes; an object deleted meanwhile is simply gone.
func TestSourceKeysAndGet(t *testing.T) {
	cs := fake.NewClientset(cm("a", "x", "1"), cm("b", "y", "2"))
	s := startSource(t, Clients{Typed: cs}, configMaps, Scope{Namespaces: []string{"a", "b"}}, nil, &recordQueue{})
	keys := s.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a/x", "b/y"}) {
		t.Fatalf("Keys() = %v", keys)
	}
	if o, ok := s.Get("b/y"); !ok || key(o) != "b/y" {
		t.Fatalf("Get(b/y) = %v, %v", o, ok)
	}
	if err := cs.CoreV1().ConfigMaps("a").Delete(context.Background(), "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		_, ok := s.Get("a/x")
		return !ok, nil
	})
	if err != nil {
		t.Fatal("a/x still cached 15s after its delete")
	}
	if _, ok := s.Get("c/z"); ok {
		t.Error("Get of an unknown key found something")
	}
}

func TestSourceNamespaces(t *testing.T) {
	cs := fake.NewClientset(cm("a", "x", "1"), cm("b", "x", "2"), cm("c", "x", "3"))
	q := &recordQueue{}
	s := startSource(t, Clients{Typed: cs}, configMaps, Scope{Namespaces: []string{"a", "b"}}, nil, q)
	if n := len(s.informers); n != 2 {
		t.Errorf("%d informers, want one per namespace", n)
	}
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"a/x", "b/x"}) {
		t.Errorf("List() = %v, want a/x and b/x", got)
	}

	ctx := context.Background()
	// c first: had the Source watched all namespaces, its add would come
	// before the adds in a and b.
	for _, ns := range []string{"c", "a", "b"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm(ns, "y", "4"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := q.waitFor(t, "adds in a and b", func(cs []Change) bool {
		return hasChange(Added, "a/y")(cs) && hasChange(Added, "b/y")(cs)
	})
	if len(got) != 2 {
		t.Errorf("changes = %s, want the adds in a and b only", describe(got))
	}
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"a/x", "a/y", "b/x", "b/y"}) {
		t.Errorf("List() = %v", got)
	}
}

func TestSourceNamespacesIgnoredForClusterScoped(t *testing.T) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin", ResourceVersion: "1"}}
	cs := fake.NewClientset(role)
	s := startSource(t, Clients{Typed: cs}, clusterRoles, Scope{Namespaces: []string{"a", "b"}}, nil, &recordQueue{})
	if n := len(s.informers); n != 1 {
		t.Errorf("%d informers for a cluster-scoped type, want 1", n)
	}
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"admin"}) {
		t.Errorf("List() = %v", got)
	}
}

func TestSourceSelectors(t *testing.T) {
	in := cm("a", "in", "1")
	in.Labels = map[string]string{"app": "x"}
	out := cm("a", "out", "2")
	out.Labels = map[string]string{"app": "y"}
	cs := fake.NewClientset(in, out)

	type seen struct {
		verb, ns, labels, fields string
	}
	var mu sync.Mutex
	var actions []seen
	record := func(a clienttesting.Action, opts metav1.ListOptions) {
		mu.Lock()
		defer mu.Unlock()
		actions = append(actions, seen{a.GetVerb(), a.GetNamespace(), opts.LabelSelector, opts.FieldSelector})
	}
	cs.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		record(a, a.(clienttesting.ListActionImpl).ListOptions)
		return false, nil, nil
	})
	cs.PrependWatchReactor("configmaps", func(a clienttesting.Action) (bool, watch.Interface, error) {
		record(a, a.(clienttesting.WatchActionImpl).ListOptions)
		return false, nil, nil
	})

	scope := Scope{Namespaces: []string{"a", "b"}, LabelSelector: "app=x", FieldSelector: "metadata.name!=skip"}
	s := startSource(t, Clients{Typed: cs}, configMaps, scope, nil, &recordQueue{})

	// The fake clientset applies label selectors to lists (not to watches,
	// and field selectors not at all), so the cache holds only a/in.
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"a/in"}) {
		t.Errorf("List() = %v, want only the object matching the label selector", got)
	}

	// Every list and watch carries the scope's selectors, per namespace.
	var got []seen
	var want map[seen]bool
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		got = slices.Clone(actions)
		mu.Unlock()
		want = map[seen]bool{}
		for _, ns := range scope.Namespaces {
			for _, verb := range []string{"list", "watch"} {
				want[seen{verb, ns, scope.LabelSelector, scope.FieldSelector}] = true
			}
		}
		for _, a := range got {
			if !slices.Contains(scope.Namespaces, a.ns) || a.labels != scope.LabelSelector || a.fields != scope.FieldSelector {
				return false, fmt.Errorf("request %+v does not carry the scope %+v", a, scope)
			}
			delete(want, a)
		}
		return len(want) == 0, nil
	})
	if wait.Interrupted(err) {
		t.Fatalf("no request seen for %v within 15s; seen %+v", want, got)
	} else if err != nil {
		t.Fatal(err)
	}
}

func TestSourceDoesNotMutateCache(t *testing.T) {
	pre := cm("a", "x", "1")
	pre.Annotations = map[string]string{"k": "v"}
	pre.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	cs := fake.NewClientset(pre, cm("a", "y", "2"), cm("a", "z", "3"))
	q := &recordQueue{}
	s := startSource(t, Clients{Typed: cs}, configMaps, Scope{}, nil, q)

	before := s.List()
	copies := make([]runtime.Object, len(before))
	for i, o := range before {
		copies[i] = o.DeepCopyObject()
	}

	// Feed the cache's own objects through every handler path...
	h := s.handler()
	for _, o := range before {
		newer := o.DeepCopyObject()
		accessorOf(t, newer).SetResourceVersion("99")
		h.OnAdd(o, false)
		h.OnUpdate(o, newer)
		h.OnUpdate(newer, o)
		h.OnUpdate(o, o)
		h.OnDelete(o)
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: key(o), Obj: o})
	}
	// ...and let the informer deliver real changes to other objects.
	ctx := context.Background()
	upd := cm("a", "y", "4")
	if _, err := cs.CoreV1().ConfigMaps("a").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("a").Delete(ctx, "z", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The handler calls above already recorded changes for a/y and a/z; an
	// add of a new object tells when the informer is done with the rest.
	if _, err := cs.CoreV1().ConfigMaps("a").Create(ctx, cm("a", "marker", "5"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q.waitFor(t, "add of a/marker", hasChange(Added, "a/marker"))
	if got := listKeys(s); !reflect.DeepEqual(got, []string{"a/marker", "a/x", "a/y"}) {
		t.Errorf("List() = %v after the informer's changes", got)
	}

	for i, o := range before {
		if !reflect.DeepEqual(o, copies[i]) {
			t.Errorf("cached object %s was modified:\n got %#v\nwant %#v", key(o), o, copies[i])
		}
	}
	for _, o := range s.List() {
		onServer, err := cs.CoreV1().ConfigMaps("a").Get(ctx, accessorOf(t, o).GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.(*corev1.ConfigMap).Data, onServer.Data) || !reflect.DeepEqual(accessorOf(t, o).GetAnnotations(), onServer.Annotations) {
			t.Errorf("cached %s differs from the server's: %#v vs %#v", key(o), o, onServer)
		}
	}
}

func accessorOf(t *testing.T, o runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSourceTypedBuiltin(t *testing.T) {
	pre := cm("a", "x", "1")
	pre.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	q := &recordQueue{}
	s := startSource(t, Clients{Typed: fake.NewClientset(pre), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}, configMaps, Scope{}, TransformOptions{StripManagedFields: true}.Transform(), q)
	if !s.Typed {
		t.Error("Typed = false for configmaps with a typed client")
	}
	objs := s.List()
	if len(objs) != 1 {
		t.Fatalf("List() = %v", objs)
	}
	o, ok := objs[0].(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("cached object is %T, want *corev1.ConfigMap", objs[0])
	}
	if len(o.ManagedFields) != 0 {
		t.Errorf("transform not applied on the typed path: managedFields %v", o.ManagedFields)
	}
}

func widget(ns, name, resourceVersion string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetResourceVersion(resourceVersion)
	return u
}

func TestSourceDynamicCustomResource(t *testing.T) {
	for name, typed := range map[string]bool{"dynamic-only": false, "typed-lacks-type": true} {
		t.Run(name, func(t *testing.T) {
			pre := widget("a", "w1", "1")
			pre.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}})
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{widgets.GVR: "WidgetList"}, pre)
			clients := Clients{Dynamic: dyn}
			if typed {
				// The typed factory has no informer for widgets: the
				// Source falls back to the dynamic client.
				clients.Typed = fake.NewClientset()
			}
			q := &recordQueue{}
			s := startSource(t, clients, widgets, Scope{}, TransformOptions{StripManagedFields: true}.Transform(), q)
			if s.Typed {
				t.Error("Typed = true for a custom resource")
			}
			objs := s.List()
			if len(objs) != 1 {
				t.Fatalf("List() = %v", objs)
			}
			c, ok := objs[0].(*Compact)
			if !ok {
				t.Fatalf("cached object is %T, want *Compact", objs[0])
			}
			u, err := c.Unstructured()
			if err != nil {
				t.Fatal(err)
			}
			if c.GetName() != "w1" || u.GetName() != "w1" || len(u.GetManagedFields()) != 0 {
				t.Errorf("cached widget %v (transform not applied on the dynamic path?)", u.Object)
			}
			if _, err := dyn.Resource(widgets.GVR).Namespace("a").Create(context.Background(), widget("a", name, "2"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got := q.waitFor(t, "added widget", hasChange(Added, "a/"+name))
			if _, ok := got[0].Object.(*Compact); !ok || len(got) != 1 {
				t.Errorf("changes = %s (%T)", describe(got), got[0].Object)
			}
		})
	}
}

func TestNewSourceWithoutUsableClient(t *testing.T) {
	for name, c := range map[string]struct {
		clients Clients
		res     *Resource
	}{
		"no clients":                  {Clients{}, configMaps},
		"custom resource, typed only": {Clients{Typed: fake.NewClientset()}, widgets},
	} {
		t.Run(name, func(t *testing.T) {
			if s, err := NewSource(c.clients, c.res, Scope{Namespaces: []string{"a"}}, nil, &recordQueue{}); err == nil {
				t.Errorf("NewSource = %+v, want an error", s)
			}
		})
	}
}

// TestSourceUnstructuredCache: WithUnstructuredCache keeps a custom
// resource as the transform left it, an Unstructured, where the cache
// otherwise holds Compact objects (TestSourceDynamicCustomResource).
func TestSourceUnstructuredCache(t *testing.T) {
	for name, opts := range map[string][]SourceOption{
		"plain": {WithUnstructuredCache()},
	} {
		t.Run(name, func(t *testing.T) {
			pre := widget("a", "w1", "1")
			pre.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}})
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{widgets.GVR: "WidgetList"}, pre)
			s := startSource(t, Clients{Dynamic: dyn}, widgets, Scope{}, TransformOptions{StripManagedFields: true}.Transform(), &recordQueue{}, opts...)
			objs := s.List()
			if len(objs) != 1 {
				t.Fatalf("List() = %v", objs)
			}
			u, ok := objs[0].(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("cached object is %T, want *unstructured.Unstructured", objs[0])
			}
			if u.GetName() != "w1" || len(u.GetManagedFields()) != 0 {
				t.Errorf("cached widget %v (transform not applied?)", u.Object)
			}
		})
	}
}

// At V(6) every change the Source hands on is a line with its verb,
// object and resourceVersion; below it, none.
func TestSourceLogsChangesAtV6(t *testing.T) {
	for _, v := range []int{5, 6} {
		q := &recordQueue{}
		s, err := NewSource(Clients{Typed: fake.NewClientset()}, configMaps, Scope{}, nil, q, WithClock(pinnedClock))
		if err != nil {
			t.Fatal(err)
		}
		var logged []string
		s.logger = funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: v})
		h := s.handler()
		h.OnUpdate(cm("a", "x", "5"), cm("a", "x", "6"))
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/x", Obj: cm("a", "x", "6")})
		if v < 6 {
			if len(logged) != 0 {
				t.Errorf("at V(%d): logged %q; want nothing", v, logged)
			}
			continue
		}
		want := []string{`"verb"="updated" "object"="a/x" "resourceVersion"="6" "finalStateUnknown"=false`, `"verb"="deleted" "object"="a/x" "resourceVersion"="6" "finalStateUnknown"=true`}
		if len(logged) != len(want) {
			t.Fatalf("at V(6): logged %q; want a line per change", logged)
		}
		for i, w := range want {
			if !strings.Contains(logged[i], "Change observed") || !strings.Contains(logged[i], w) {
				t.Errorf("line %d: %s; want one with %s", i, logged[i], w)
			}
		}
	}
}

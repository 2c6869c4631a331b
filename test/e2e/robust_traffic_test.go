package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The labels and annotations the traffic writes and the bridge's
// configuration names (robustConfig).
const (
	robustOutLabel        = "robustness.kubebridge.io/out"     // set: the object leaves the ConfigMaps' label selector
	robustIgnoredAnnot    = "robustness.kubebridge.io/ignored" // in the ConfigMaps' ignoreFields: changing it alone is held back
	robustAnnot           = "robustness.kubebridge.io/note"
	robustLabel           = "robustness.kubebridge.io/color"
	robustNamespacePrefix = "robust-"
)

// trafficOptions are the generator's parameters.
type trafficOptions struct {
	seed    uint64
	rate    float64 // writes per second, all workers together
	workers int
	objects int // names per type per worker and namespace kept alive at most
	// bigBytes is the size of the "big" objects: just under what the
	// stream takes in one message.
	bigBytes int
	// namespaceEvery is how often (in writes of worker 0) a namespace is
	// deleted with its objects and a new one takes its place; 0: never.
	namespaceEvery int
}

// traffic writes objects of the run's types at a steady rate and records
// every request's outcome.
type traffic struct {
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	types []robustType
	opts  trafficOptions

	mu         sync.Mutex
	writes     []write
	namespaces []string // where objects are created now
	generation int      // namespaces created so far

	// gate is held for reading by every write and for writing by pause:
	// the nemesis quiesces the traffic around what must not race a write.
	gate sync.RWMutex

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// pause waits for the writes in flight and holds every further one until
// resume.
func (tr *traffic) pause() { tr.gate.Lock() }

func (tr *traffic) resume() { tr.gate.Unlock() }

// startTraffic creates the first namespaces and starts the workers.
func startTraffic(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, types []robustType, opts trafficOptions) (*traffic, error) {
	tr := &traffic{cs: cs, dyn: dyn, types: types, opts: opts}
	for range opts.workers {
		if _, err := tr.newNamespace(ctx); err != nil {
			return nil, err
		}
	}
	ctx, tr.cancel = context.WithCancel(ctx)
	for w := range opts.workers {
		tr.done.Add(1)
		go func() {
			defer tr.done.Done()
			tr.run(ctx, w)
		}()
	}
	return tr, nil
}

// stop ends the workers and waits for their last request to finish (the
// apiserver may commit a request the client gave up on: a write is never
// abandoned mid-flight, see churn.run).
func (tr *traffic) stop() {
	tr.cancel()
	tr.done.Wait()
}

func (tr *traffic) log() []write {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]write(nil), tr.writes...)
}

func (tr *traffic) record(w write) {
	tr.mu.Lock()
	tr.writes = append(tr.writes, w)
	tr.mu.Unlock()
}

func (tr *traffic) newNamespace(ctx context.Context) (string, error) {
	tr.mu.Lock()
	tr.generation++
	name := fmt.Sprintf("%s%d", robustNamespacePrefix, tr.generation)
	tr.mu.Unlock()
	if _, err := tr.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("traffic: create namespace %s: %w", name, err)
	}
	tr.mu.Lock()
	tr.namespaces = append(tr.namespaces, name)
	tr.mu.Unlock()
	return name, nil
}

// namespace is where worker w creates objects now.
func (tr *traffic) namespace(w int) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.namespaces[w%len(tr.namespaces)]
}

// liveObject is an object a worker wrote last, as the apiserver returned it.
type liveObject struct {
	t   robustType
	obj *unstructured.Unstructured
}

// worker is one goroutine's share of the traffic: its own names, its own
// random sequence (from the run's seed), its own view of its objects.
type worker struct {
	tr   *traffic
	id   int
	rng  *rand.Rand
	live map[string]*liveObject // type/namespace/name → object
	big  int                    // live objects of bigBytes
}

func (tr *traffic) run(ctx context.Context, w int) {
	wk := &worker{tr: tr, id: w, rng: rand.New(rand.NewPCG(tr.opts.seed, 1000+uint64(w))), live: map[string]*liveObject{}}
	interval := time.Duration(float64(time.Second) * float64(tr.opts.workers) / tr.opts.rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tr.gate.RLock()
		if w == 0 && tr.opts.namespaceEvery > 0 && i%tr.opts.namespaceEvery == 0 {
			tr.replaceNamespace(ctx)
		} else {
			wk.step(ctx, i)
		}
		tr.gate.RUnlock()
	}
}

// step makes one write: a create while the worker has few objects of a
// type, else a random change of a random object of its own.
func (wk *worker) step(ctx context.Context, i int) {
	t := wk.tr.types[wk.rng.IntN(len(wk.tr.types))]
	ns := wk.tr.namespace(wk.id)
	name := fmt.Sprintf("w%d-%03d", wk.id, wk.rng.IntN(wk.tr.opts.objects))
	key := t.resource + "/" + ns + "/" + name
	// Not ctx: a request is never cancelled mid-flight (see stop).
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	cur, ok := wk.live[key]
	if !ok {
		wk.create(opCtx, t, ns, name, i)
		return
	}
	op := robustOps[wk.rng.IntN(len(robustOps))]
	if op.name == "flip" && !t.selectable {
		op = robustOps[0]
	}
	if op.name == "delete" {
		wk.remove(opCtx, cur)
		return
	}
	obj := cur.obj.DeepCopy()
	op.change(wk, obj, i)
	wk.update(opCtx, cur.t, obj, op.name)
}

// robustOps are the changes a worker makes to an object it has.
var robustOps = []struct {
	name   string
	change func(wk *worker, obj *unstructured.Unstructured, i int)
}{
	{"update-data", func(wk *worker, obj *unstructured.Unstructured, i int) { setPayload(obj, fmt.Sprint(i)) }},
	{"update-data", func(wk *worker, obj *unstructured.Unstructured, i int) { setPayload(obj, fmt.Sprint(i)) }},
	{"update-labels", func(wk *worker, obj *unstructured.Unstructured, i int) {
		setMeta(obj, "labels", robustLabel, []string{"red", "green", "blue"}[wk.rng.IntN(3)])
	}},
	{"update-annotations", func(wk *worker, obj *unstructured.Unstructured, i int) {
		setMeta(obj, "annotations", robustAnnot, fmt.Sprint(i))
	}},
	{"update-ignored", func(wk *worker, obj *unstructured.Unstructured, i int) {
		setMeta(obj, "annotations", robustIgnoredAnnot, fmt.Sprint(i))
	}},
	{"flip", func(wk *worker, obj *unstructured.Unstructured, i int) {
		labels := obj.GetLabels()
		if labels[robustOutLabel] == "" {
			setMeta(obj, "labels", robustOutLabel, "true")
		} else {
			delete(labels, robustOutLabel)
			obj.SetLabels(labels)
		}
	}},
	{"delete", nil},
}

func setMeta(obj *unstructured.Unstructured, field, key, value string) {
	m, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", field)
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	_ = unstructured.SetNestedStringMap(obj.Object, m, "metadata", field)
}

// setPayload changes an object's content: a ConfigMap's data, a
// Widget's spec.
func setPayload(obj *unstructured.Unstructured, v string) {
	if obj.GetKind() == "ConfigMap" {
		_ = unstructured.SetNestedField(obj.Object, v, "data", "i")
		return
	}
	_ = unstructured.SetNestedField(obj.Object, v, "spec", "i")
}

func (wk *worker) create(ctx context.Context, t robustType, ns, name string, i int) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": t.apiVersion, "kind": t.kind, "metadata": map[string]any{"name": name, "namespace": ns}}}
	setPayload(obj, fmt.Sprint(i))
	op := "create"
	// A big object now and then (a few at a time): its create fits in one
	// message, its updates (object and oldObject) do not.
	if t.selectable && wk.big < 2 && wk.rng.IntN(50) == 0 {
		_ = unstructured.SetNestedField(obj.Object, strings.Repeat("b", wk.tr.opts.bigBytes), "data", "big")
		op = "create-big"
	}
	got, err := wk.tr.dyn.Resource(t.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	wk.done(t, ns, name, op, got, "", err)
	if err == nil && op == "create-big" {
		wk.big++
	}
}

func (wk *worker) update(ctx context.Context, t robustType, obj *unstructured.Unstructured, op string) {
	got, err := wk.tr.dyn.Resource(t.gvr).Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
	wk.done(t, obj.GetNamespace(), obj.GetName(), op, got, string(obj.GetUID()), err)
}

// remove deletes an object, preconditioned on its uid, so the uid
// recorded is the one deleted.
func (wk *worker) remove(ctx context.Context, cur *liveObject) {
	uid := cur.obj.GetUID()
	ns, name := cur.obj.GetNamespace(), cur.obj.GetName()
	err := wk.tr.dyn.Resource(cur.t.gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	wk.done(cur.t, ns, name, "delete", nil, string(uid), err)
}

// done records a write and brings the worker's view of the object up to
// date: from the apiserver's answer, or (after an error, which may hide a
// write that was made) from a read.
func (wk *worker) done(t robustType, ns, name, op string, got *unstructured.Unstructured, uid string, err error) {
	w := write{at: time.Now(), op: op, typ: t.typ, namespace: ns, name: name, uid: uid}
	key := t.resource + "/" + ns + "/" + name
	if got != nil && err == nil {
		w.uid, w.rv = string(got.GetUID()), got.GetResourceVersion()
	}
	if err != nil {
		w.err = err.Error()
	}
	wk.tr.record(w)
	switch {
	case err == nil && op == "delete":
		wk.forget(key)
	case err == nil:
		wk.live[key] = &liveObject{t: t, obj: got}
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cur, gerr := wk.tr.dyn.Resource(t.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case gerr == nil:
			wk.live[key] = &liveObject{t: t, obj: cur}
		case apierrors.IsNotFound(gerr):
			wk.forget(key)
		}
	}
}

func (wk *worker) forget(key string) {
	if cur, ok := wk.live[key]; ok {
		if big, _, _ := unstructured.NestedString(cur.obj.Object, "data", "big"); big != "" {
			wk.big--
		}
	}
	delete(wk.live, key)
}

// replaceNamespace deletes the oldest namespace with every object in it,
// as kubectl delete namespace does on a cluster (where the namespace
// controller deletes the contents; no controller runs here, so the
// traffic does its work: delete every object, then finalize), and
// creates a new one in its place. The workers' views of its objects are
// theirs to lose: a worker's next write of such a name is a create or
// fails and re-reads.
func (tr *traffic) replaceNamespace(ctx context.Context) {
	tr.mu.Lock()
	old := tr.namespaces[0]
	tr.mu.Unlock()
	if _, err := tr.newNamespace(ctx); err != nil {
		tr.record(write{at: time.Now(), op: "create-namespace", err: err.Error()})
		return
	}
	tr.mu.Lock()
	tr.namespaces = tr.namespaces[1:]
	tr.mu.Unlock()
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := tr.cs.CoreV1().Namespaces().Delete(opCtx, old, metav1.DeleteOptions{})
	for _, t := range tr.types {
		if err == nil {
			err = tr.dyn.Resource(t.gvr).Namespace(old).DeleteCollection(opCtx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}
	}
	if err == nil {
		err = finalizeNamespace(opCtx, tr.cs, old)
	}
	w := write{at: time.Now(), op: "delete-namespace", namespace: old}
	if err != nil {
		w.err = err.Error()
	}
	tr.record(w)
}

// finalizeNamespace removes the kubernetes finalizer of a terminating
// namespace, the namespace controller's last step.
func finalizeNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ns.Spec.Finalizers = nil
	_, err = cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	return err
}

// robustType is one type the run writes and the bridge watches: the
// types are a table, and every part of the test handles them alike.
type robustType struct {
	resource   string // as BRIDGE_CONFIG names it
	gvr        schema.GroupVersionResource
	apiVersion string
	kind       string
	typ        string // the type's subject prefix
	// reflectorType is how client-go's reflector names the type in its
	// log (see relistsIn): a typed informer's Go type, a dynamic one's
	// GroupVersionResource.
	reflectorType string
	// selectable: the type has the label selector and the ignored
	// annotation (the ConfigMaps), so flips and big objects apply.
	selectable bool
	// example is what pkg/consume decodes the type into: typed for the
	// built-in types its scheme knows, unstructured for the others.
	example func() runtime.Object
}

// resourceName is how the bridge's log names the type (its "resource"
// key, informers.Resource.String).
func (t robustType) resourceName() string {
	name := t.gvr.Resource + "." + t.gvr.Version
	if t.gvr.Group != "" {
		name += "." + t.gvr.Group
	}
	return name
}

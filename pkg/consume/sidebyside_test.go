package consume_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// The proof of the informer over NATS: next to a client-go informer on the
// apiserver, through churn and a bridge restart with changes made while
// it is down, it ends with the same cache and its handlers see, per
// object, the same calls modulo coalescing (see the package
// documentation, Informers).

// pair is an informer on the apiserver and one over NATS, with the same
// label selector, indexers and handlers.
type pair struct {
	name, selector string
	api, nats      cache.SharedIndexInformer
	apiLog, natLog *callLog
	lw             *checkedListWatch
}

var indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "parity": consume.LabelIndexFunc("parity")}

func (h *harness) startPair(ctx context.Context, name, selector string, mode consume.BootstrapMode, gone map[int]bool) *pair {
	h.t.Helper()
	p := &pair{name: name, selector: selector, apiLog: newCallLog(), natLog: newCallLog()}
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(h.cs, 0, kubeinformers.WithNamespace(h.ns),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	p.api = factory.Core().V1().ConfigMaps().Informer()
	// The factory's informers have the namespace index already.
	if err := p.api.AddIndexers(cache.Indexers{"parity": indexers["parity"]}); err != nil {
		h.t.Fatal(err)
	}
	lw, err := h.client().NewListWatch(consume.Filter{Resource: "configmaps", Namespace: h.ns}, &corev1.ConfigMap{}, consume.Bootstrap(mode),
		consume.WithHooks(consume.Hooks{OnViolation: func(v consume.Violation) {
			// An end marker read before any begin (after a list from the
			// last message per subject) is reported, and no breach.
			if v.Kind.Breach() {
				h.t.Errorf("%s: violation: %v", name, &v)
			}
		}}))
	if err != nil {
		h.t.Fatal(err)
	}
	p.lw = newCheckedListWatch(lw, selector, gone)
	p.nats = cache.NewSharedIndexInformer(p.lw, &corev1.ConfigMap{}, 0, indexers)
	for _, s := range []struct {
		inf cache.SharedIndexInformer
		log *callLog
	}{{p.api, p.apiLog}, {p.nats, p.natLog}} {
		if _, err := s.inf.AddEventHandler(s.log.handler()); err != nil {
			h.t.Fatal(err)
		}
	}
	// The apiserver's first: the NATS informer then lists the same states,
	// since nothing changes until both have synced.
	ctx, stop := context.WithCancel(ctx)
	h.t.Cleanup(stop)
	for _, inf := range []cache.SharedIndexInformer{p.api, p.nats} {
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		h.t.Cleanup(func() { stop(); <-done })
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
			h.t.Fatalf("%s: not synced", name)
		}
		cancel()
	}
	return p
}

// TestInformerSideBySide runs pairs of informers, one on the apiserver
// and one over NATS with the same label selector, indexers and handlers:
// of all ConfigMaps of a namespace (the NATS one bootstrapping from the
// last message per subject), of those labelled parity=even (by a full
// replay), and of those again, with the NATS informer's watches refused
// as Gone now and then, so that it lists again. ConfigMaps are created,
// updated, relabelled and deleted under a bridge publishing snapshots
// every second, then while no bridge runs, then under a restarted bridge.
// Every NATS watch ends after a few events, so that the informers resume
// all along.
//
// At the end both informers of a pair hold the same objects (keys, uids,
// resourceVersions, data, labels, index entries) and, per uid, the states
// the NATS informer's handlers went through are a subsequence of the
// apiserver informer's, ending in the same state. The NATS watches behave
// as the apiserver's: Added only for an object not held, Modified only
// with a new resourceVersion, Deleted only for an object held.
//
// With a stream that keeps every message, a NATS informer that does not
// list again sees per uid exactly the states a State reading the same
// stream sees, under its selector: what it misses of the apiserver's is
// what the bridge coalesced. With the default stream it may miss more:
// what compaction and deletes' roll-ups removed before it read it.
func TestInformerSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream map[string]string
		// resync is BRIDGE_RESYNC_PERIOD after the restart.
		resync string
		exact  bool
	}{
		// No snapshot after the restart's: nothing repairs what a watch
		// would lose.
		{"every message kept", map[string]string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1", "BRIDGE_TOMBSTONE_TTL": "0"}, "0", true},
		// Snapshots all along: a watch behind an object whose name was
		// deleted, created and deleted again reads only the last delete
		// (it rolled the object's subject up), which is of another uid
		// than the one held, and so a no-op; the next snapshot's sweep
		// removes the object held.
		{"default stream", nil, "1s", false},
	} {
		t.Run(tc.name, func(t *testing.T) { sideBySide(t, tc.stream, tc.resync, tc.exact) })
	}
}

func sideBySide(t *testing.T, stream map[string]string, resync string, exact bool) {
	const names, ops = 60, 2000
	h := newHarness(t)
	h.createLabelled(0, names)
	env := func(resync string) map[string]string {
		v := map[string]string{"BRIDGE_RESYNC_PERIOD": resync}
		maps.Copy(v, stream)
		return v
	}
	stop := h.launchBridge("configmaps", env("1s")).Stop
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	pairs := []*pair{
		h.startPair(ctx, "all", "", consume.LastPerSubject, nil),
		h.startPair(ctx, "even", "parity=even", consume.FullReplay, nil),
		h.startPair(ctx, "even, listing again", "parity=even", consume.LastPerSubject, goneAt),
	}
	ref := h.referenceState(ctx)
	h.convergePairs(pairs, ref)

	if err := h.labelChurn(1, names, ops, 4); err != nil {
		t.Fatal(err)
	}
	stop()
	h.changeWhileDown()
	h.launchBridge("configmaps", env(resync))
	if err := h.labelChurn(2, names, ops, 4); err != nil {
		t.Fatal(err)
	}
	h.convergePairs(pairs, ref)

	for _, p := range pairs {
		h.compareCaches(p)
		fewer := compareLogs(t, p.name, p.apiLog, p.natLog)
		lists, watches, swept := p.lw.counts()
		t.Logf("%s: %d uids, %d of them seen through fewer states over NATS; NATS informer: %d lists, %d watches, %d objects swept; last list: %+v",
			p.name, len(p.apiLog.snapshot()), fewer, lists, watches, swept, p.lw.Stats())
		if watches <= lists || p.lw.gone != nil && lists < 2 {
			t.Errorf("%s: %d lists and %d watches: the test did not make the informer resume or list again", p.name, lists, watches)
		}
		for _, e := range p.lw.problems() {
			t.Errorf("%s: watch: %s", p.name, e)
		}
		if t.Failed() {
			for _, d := range p.lw.drops() {
				t.Logf("%s: %s", p.name, d)
			}
			for key, uid := range wrongKeys(p.apiLog, p.natLog) {
				t.Logf("%s: uid %s: apiserver calls %+v; NATS calls %+v", p.name, uid, p.apiLog.snapshot()[uid], p.natLog.snapshot()[uid])
				h.dumpHistory(key)
			}
		}
	}
	if exact {
		for _, p := range pairs {
			if p.lw.gone == nil {
				sel, err := labels.Parse(p.selector)
				if err != nil {
					t.Fatal(err)
				}
				sameStates(t, p.name, p.natLog, ref, sel)
			}
		}
	}
}

// referenceState runs a State of the namespace's ConfigMaps whose
// handlers log their calls.
func (h *harness) referenceState(ctx context.Context) *callLog {
	h.t.Helper()
	log := newCallLog()
	st, err := h.client().NewState([]consume.Filter{{Resource: "configmaps", Namespace: h.ns}},
		consume.WithHooks(consume.Hooks{OnViolation: func(v consume.Violation) {
			// As for the pairs: it bootstraps from the last message per
			// subject, so when the newest begin marker is newer than the
			// newest end marker (a snapshot in progress) the end comes
			// first and is reported, and no breach.
			if v.Kind.Breach() {
				h.t.Errorf("reference state: violation: %v", &v)
			}
		}}))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := st.AddEventHandler("configmaps", log.handler()); err != nil {
		h.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	h.t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			h.t.Errorf("reference state: %v", err)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := st.WaitForSync(wctx); err != nil {
		h.t.Fatal(err)
	}
	return log
}

// convergePairs waits until every informer holds what the apiserver
// lists, and every handler (the reference State's too) has been told of
// it.
func (h *harness) convergePairs(pairs []*pair, ref *callLog) {
	h.t.Helper()
	var d []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		d = d[:0]
		if got, want := ref.finals(), h.listSelected(""); !maps.Equal(got, want) {
			d = append(d, "reference state: "+diffMaps(got, want))
		}
		for _, p := range pairs {
			want := h.listSelected(p.selector)
			for side, got := range map[string]map[string]string{
				"apiserver informer": stored(p.api), "NATS informer": stored(p.nats),
				"apiserver handlers": p.apiLog.finals(), "NATS handlers": p.natLog.finals(),
			} {
				if !maps.Equal(got, want) {
					d = append(d, fmt.Sprintf("%s %s: %s", p.name, side, diffMaps(got, want)))
				}
			}
		}
		return len(d) == 0, nil
	})
	if err != nil {
		for _, p := range pairs {
			h.t.Logf("%s: watch problems: %q", p.name, p.lw.problems())
		}
		h.t.Fatalf("not converged after 2 minutes: %s", strings.Join(d, "; "))
	}
}

// compareCaches compares the objects, listers and indexes of a pair.
func (h *harness) compareCaches(p *pair) {
	h.t.Helper()
	for _, obj := range p.api.GetIndexer().List() {
		a := obj.(*corev1.ConfigMap)
		o, ok, err := p.nats.GetIndexer().GetByKey(a.Namespace + "/" + a.Name)
		if err != nil || !ok {
			h.t.Errorf("%s: %s not held over NATS", p.name, a.Name)
			continue
		}
		n := o.(*corev1.ConfigMap)
		if !equality.Semantic.DeepEqual(a.Data, n.Data) || !equality.Semantic.DeepEqual(a.Labels, n.Labels) {
			h.t.Errorf("%s: %s: data %v labels %v over NATS, %v %v from the apiserver", p.name, a.Name, n.Data, n.Labels, a.Data, a.Labels)
		}
	}
	for _, inf := range []cache.SharedIndexInformer{p.api, p.nats} {
		if got, err := listersv1.NewConfigMapLister(inf.GetIndexer()).ConfigMaps(h.ns).List(labels.Everything()); err != nil || len(got) != len(p.api.GetIndexer().List()) {
			h.t.Errorf("%s: the lister lists %d (%v)", p.name, len(got), err)
		}
	}
	for _, ix := range [][2]string{{cache.NamespaceIndex, h.ns}, {"parity", "even"}, {"parity", "odd"}} {
		a, errA := p.api.GetIndexer().IndexKeys(ix[0], ix[1])
		n, errN := p.nats.GetIndexer().IndexKeys(ix[0], ix[1])
		slices.Sort(a)
		slices.Sort(n)
		if errA != nil || errN != nil || !slices.Equal(a, n) {
			h.t.Errorf("%s: index %s=%s: %d keys over NATS, %d from the apiserver (%v %v)", p.name, ix[0], ix[1], len(n), len(a), errA, errN)
		}
	}
}

// listSelected is what the apiserver lists under selector, as key →
// uid@resourceVersion.
func (h *harness) listSelected(selector string) map[string]string {
	h.t.Helper()
	l, err := h.cs.CoreV1().ConfigMaps(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for i := range l.Items {
		out[h.ns+"/"+l.Items[i].Name] = string(l.Items[i].UID) + "@" + l.Items[i].ResourceVersion
	}
	return out
}

// stored is an informer's cache as key → uid@resourceVersion.
func stored(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, o := range inf.GetIndexer().List() {
		m, err := meta.Accessor(o)
		if err != nil {
			panic(err)
		}
		out[m.GetNamespace()+"/"+m.GetName()] = string(m.GetUID()) + "@" + m.GetResourceVersion()
	}
	return out
}

func diffMaps(got, want map[string]string) string {
	var d []string
	for k, w := range want {
		if g := got[k]; g != w {
			d = append(d, fmt.Sprintf("%s=%q want %q", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s=%q not listed", k, g))
		}
	}
	sort.Strings(d)
	if len(d) > 5 {
		d = append(d[:5:5], fmt.Sprintf("… %d in all", len(d)))
	}
	return strings.Join(d, ", ")
}

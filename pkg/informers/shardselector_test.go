package informers

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// requests is what a fake apiserver was asked: its lists, and its watches
// with the options each was sent.
type requests struct {
	mu      sync.Mutex
	lists   int
	opts    []metav1.ListOptions
	watches []*watch.FakeWatcher
}

func (r *requests) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lists++
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.ConfigMap{*cm("a", "x", "10")}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			w := watch.NewFakeWithChanSize(10, false)
			r.opts = append(r.opts, o)
			r.watches = append(r.watches, w)
			return w, nil
		},
	}
}

func (r *requests) counts() (lists, watches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists, len(r.watches)
}

// waitWatches waits until n watches were sent, and returns the last.
func (r *requests) waitWatches(t *testing.T, n int) (*watch.FakeWatcher, metav1.ListOptions) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, watches := r.counts()
		return watches >= n, nil
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		t.Fatalf("%d watches sent within 10s, want %d", len(r.watches), n)
	}
	return r.watches[n-1], r.opts[n-1]
}

// listThenWatch makes the reflector list, then watch: the fake apiserver
// does not end a watch-list's initial events with a bookmark.
type listThenWatch struct{ ownedListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// A new shard selector stops the running watch; the informer's reflector
// watches again from the resource version it had reached, with the new
// selector, and lists nothing again.
func TestShardSelectorSetRestartsWatches(t *testing.T) {
	req := &requests{}
	sel := NewShardSelector("old")
	lw := listThenWatch{ownedListWatch{lw: req.listWatch(), owns: ownsA, selector: sel}}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	first, opts := req.waitWatches(t, 1)
	if opts.ShardSelector != "old" {
		t.Fatalf("the first watch sent selector %q, want old", opts.ShardSelector)
	}
	first.Modify(cm("a", "x", "11"))
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return inf.LastSyncResourceVersion() == "11", nil
	})
	if err != nil {
		t.Fatalf("the informer synced up to rv %q within 10s, want \"11\"", inf.LastSyncResourceVersion())
	}

	if sel.Set("old") {
		t.Error("Set of the selector in use reported a change")
	}
	if first.IsStopped() {
		t.Fatal("Set of the selector in use stopped the watch")
	}
	if !sel.Set("new") {
		t.Error("Set of a new selector reported no change")
	}
	if !first.IsStopped() {
		t.Fatal("the watch sent with the old selector runs on after Set returned")
	}
	_, opts = req.waitWatches(t, 2)
	if opts.ShardSelector != "new" || opts.ResourceVersion != "11" {
		t.Errorf("the watch after Set sent selector %q from resourceVersion %q, want new from 11", opts.ShardSelector, opts.ResourceVersion)
	}
	if lists, _ := req.counts(); lists != 1 {
		t.Errorf("%d lists, want 1: a new selector needs a new watch, not a relist", lists)
	}
}

// A watch sent with a selector that a Set replaced before the watch was
// tracked is stopped at once; one its reflector stopped is forgotten.
func TestShardSelectorTracksOnlyCurrentWatches(t *testing.T) {
	sel := NewShardSelector("old")
	_, gen := sel.current()
	sel.Set("new")
	late := watch.NewFake()
	sel.track(gen, late, late)
	if !late.IsStopped() {
		t.Error("a watch sent with a replaced selector was not stopped")
	}

	_, gen = sel.current()
	running := watch.NewFake()
	w := sel.track(gen, running, running)
	if running.IsStopped() {
		t.Fatal("a watch sent with the current selector was stopped")
	}
	w.Stop()
	sel.mu.Lock()
	n := len(sel.running)
	sel.mu.Unlock()
	if n != 0 {
		t.Errorf("%d watches tracked after their reflector stopped them, want 0", n)
	}
}

// A nil ShardSelector sends no selector and tracks nothing.
func TestNilShardSelector(t *testing.T) {
	req := &requests{}
	w, err := ownedListWatch{lw: req.listWatch(), owns: ownsA}.WatchWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, opts := req.waitWatches(t, 1); opts.ShardSelector != "" {
		t.Errorf("selector %q sent without a ShardSelector", opts.ShardSelector)
	}
}

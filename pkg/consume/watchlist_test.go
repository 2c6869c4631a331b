package consume

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// A watch with sendInitialEvents, as client-go's reflector makes one by
// default, streams the state as the API server does: an Added event per
// object, then a bookmark annotated k8s.io/initial-events-end at the
// stream sequence the state is consistent at, then the changes.
func TestListWatchStreamsInitialEvents(t *testing.T) {
	f, c := newStreamFab(t)
	history(f)
	last := f.seqs[len(f.seqs)-1]
	lw := listWatch(t, c)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	f.added(cm("ns", "end", "u9", "35"))

	var added, after []string
	var bookmark watch.Event
	for ev := range w.ResultChan() {
		switch {
		case ev.Type == watch.Bookmark:
			bookmark = ev
		case bookmark.Object == nil && ev.Type == watch.Added:
			added = append(added, describe(ev.Object))
		default:
			after = append(after, string(ev.Type)+" "+describe(ev.Object))
		}
		if describe(ev.Object) == "ns/end@35" {
			break
		}
	}
	slices.Sort(added)
	if !slices.Equal(added, historyState) {
		t.Errorf("initial events %v, want an Added per object of %v", added, historyState)
	}
	if bookmark.Object == nil {
		t.Fatal("no bookmark after the initial events")
	}
	m, err := meta.Accessor(bookmark.Object)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bookmark.Object.(*corev1.ConfigMap); !ok || m.GetResourceVersion() != listRV(last) || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark %T at resourceVersion %q with annotations %v, want a ConfigMap at %q annotated %s",
			bookmark.Object, m.GetResourceVersion(), m.GetAnnotations(), listRV(last), metav1.InitialEventsAnnotationKey)
	}
	if want := []string{"ADDED ns/end@35"}; !slices.Equal(after, want) {
		t.Errorf("after the bookmark %q, want %q", after, want)
	}
}

// An informer on a ListWatch fills its cache by watch-list streaming (the
// reflector's default): it holds the ListWatch's own objects, where a
// list would have it hold a copy of each.
func TestInformerHoldsTheListWatchObjects(t *testing.T) {
	f, c := newStreamFab(t)
	history(f)
	lw := listWatch(t, c)
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync within 30s")
	}
	cached := inf.GetStore().List()
	if len(cached) != len(historyState) {
		t.Fatalf("the informer holds %d objects, want %d", len(cached), len(historyState))
	}
	held := lw.applier.Load().types[0].indexer
	for _, obj := range cached {
		own, ok, err := held.Get(obj)
		if err != nil || !ok {
			t.Fatalf("%s: not held by the ListWatch (%v)", describe(obj), err)
		}
		if own.(*corev1.ConfigMap) != obj.(*corev1.ConfigMap) {
			t.Errorf("%s: the informer holds a copy of the ListWatch's object", describe(obj))
		}
	}
}

package consume

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// newStreamFab is a fab writing to a JetStream stream; deletes do not roll
// up their subjects, so that a watch reads every message whatever its
// pace (a roll-up may remove an item before the watch reads it, and the
// end marker then sweeps its object: right, but another event).
func newStreamFab(t *testing.T) (*fab, *Client) {
	t.Helper()
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	f.enc.TombstoneRollup, f.enc.TombstoneTTL = false, 0
	return f, testClient(t, js)
}

// listWatch is a ListWatch of configmaps over js whose violations fail
// the test.
func listWatch(t *testing.T, c *Client, opts ...ListWatchOption) *ListWatch {
	t.Helper()
	opts = append([]ListWatchOption{WithHooks(Hooks{OnViolation: func(v Violation) { t.Errorf("violation: %v", &v) }})}, opts...)
	lw, err := c.NewListWatch(Filter{Resource: "configmaps"}, &corev1.ConfigMap{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

// list lists and returns the items as sorted key@rv, and the list's
// resourceVersion.
func list(t *testing.T, lw *ListWatch, opts metav1.ListOptions) ([]string, string) {
	t.Helper()
	obj, err := lw.ListWithContext(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := obj.(*corev1.ConfigMapList)
	if !ok {
		t.Fatalf("List returned a %T", obj)
	}
	var out []string
	for i := range l.Items {
		out = append(out, describe(&l.Items[i]))
	}
	slices.Sort(out)
	return out, l.ResourceVersion
}

func startWatch(t *testing.T, lw *ListWatch, rv string, selector string) watch.Interface {
	t.Helper()
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: rv, LabelSelector: selector})
	if err != nil {
		t.Fatalf("Watch from %q: %v", rv, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// events reads events as "TYPE key@rv" until one of until's objects
// comes; the stream is written in order, so what comes before it is all
// the watch will ever send before it.
func events(t *testing.T, w watch.Interface, until string) []string {
	t.Helper()
	var out []string
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %q", out)
			}
			if ev.Type == watch.Error {
				t.Fatalf("error event after %q: %v", out, apierrors.FromObject(ev.Object))
			}
			d := describe(ev.Object)
			out = append(out, string(ev.Type)+" "+d)
			if d == until {
				return out
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s after %q", until, out)
		}
	}
}

// The watch events bring a store to each state the Applier goes
// through, and no further: no event for snapshot items that change
// nothing, for a deposed leader's events or for stale deletes; a Deleted
// for a sweep and for a delete.
func TestListWatchEvents(t *testing.T) {
	for _, mode := range []BootstrapMode{LastPerSubject, FullReplay} {
		t.Run(mode.String(), func(t *testing.T) {
			f, c := newStreamFab(t)
			history(f)
			lw := listWatch(t, c, Bootstrap(mode))
			items, rv := list(t, lw, metav1.ListOptions{ResourceVersion: "0"})
			if !slices.Equal(items, historyState) {
				t.Errorf("listed %v, want %v", items, historyState)
			}
			if last := f.seqs[len(f.seqs)-1]; rv != listRV(last) {
				t.Errorf("list resourceVersion %s, want the stream sequence %d", rv, last)
			}
			// The reflector's store indexes; the ListWatch's own would
			// hold an entry per object for nobody.
			if ix := lw.applier.Load().types[0].indexer.GetIndexers(); len(ix) != 0 {
				t.Errorf("the ListWatch's indexer has indexers %v, want none", slices.Collect(maps.Keys(ix)))
			}
			w := startWatch(t, lw, rv, "")

			old := f.seqs[0] // term a, deposed by b
			f.updated(cm("ns", "a", "u1", "30"), cm("ns", "a", "u1", "14"))
			f.begin("s3")
			f.item("s3", cm("ns", "a", "u1", "30")) // changes nothing
			f.item("s3", cm("ns", "b", "u2", "31")) // newer
			f.inTerm(old, func() { f.deleted(cm("ns", "e", "u6", "32")) })
			f.item("s3", cm("ns", "e", "u6", "22"))
			f.item("s3", cm("ns", "f", "u7", "21"))
			// Sweeps d: not listed as unpublished this time, and no newer
			// message of it.
			f.end("s3", 4)
			f.deleted(cm("ns", "never", "u10", "33")) // not held: stale
			f.deleted(cm("ns", "f", "u7", "34"))
			f.added(cm("ns", "end", "u9", "35"))
			want := []string{"MODIFIED ns/a@30", "MODIFIED ns/b@31", "DELETED ns/d@13", "DELETED ns/f@34", "ADDED ns/end@35"}
			if got := events(t, w, "ns/end@35"); !slices.Equal(got, want) {
				t.Errorf("events %q,\nwant %q", got, want)
			}
		})
	}
}

// A watch that ends leaves the events it did not deliver to the next,
// which also gets what was stored meanwhile; a watch from an unknown
// resourceVersion is Gone; one from "" starts over with an Added per
// object.
func TestListWatchResumes(t *testing.T) {
	f, c := newStreamFab(t)
	history(f)
	lw := listWatch(t, c)
	_, rv := list(t, lw, metav1.ListOptions{})
	w := startWatch(t, lw, rv, "")
	f.updated(cm("ns", "a", "u1", "30"), cm("ns", "a", "u1", "14"))
	b := f.updated(cm("ns", "b", "u2", "31"), cm("ns", "b", "u2", "11"))
	f.updated(cm("ns", "e", "u6", "32"), cm("ns", "e", "u6", "22"))
	if got := events(t, w, "ns/a@30"); !slices.Equal(got, []string{"MODIFIED ns/a@30"}) {
		t.Fatalf("first watch: %q", got)
	}
	// The watch applies b's update and waits to deliver it: stop it then.
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return lw.Stats().LastSeq >= b, nil
	})
	if err != nil {
		t.Fatalf("the watch did not apply seq %d within 30s (applied up to %d)", b, lw.Stats().LastSeq)
	}
	w.Stop()
	f.deleted(cm("ns", "d", "u4", "33"))

	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "14"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from a resourceVersion the ListWatch did not deliver last: %v, want 410 Expired", err)
	}
	w = startWatch(t, lw, "30", "")
	want := []string{"MODIFIED ns/b@31", "MODIFIED ns/e@32", "DELETED ns/d@33"}
	if got := events(t, w, "ns/d@33"); !slices.Equal(got, want) {
		t.Errorf("resumed watch: %q, want %q", got, want)
	}

	w = startWatch(t, lw, "", "")
	f.added(cm("ns", "end", "u9", "35"))
	want = []string{"ADDED ns/a@30", "ADDED ns/b@31", "ADDED ns/e@32", "ADDED ns/f@21", "ADDED ns/end@35"}
	got := events(t, w, "ns/end@35")
	slices.Sort(got[:min(4, len(got))])
	if !slices.Equal(got, want) {
		t.Errorf("watch from \"\": %q, want %q", got, want)
	}
}

// Watches of one to five events each, while the stream is written: every
// event comes once, in order, however the watches cut the stream.
func TestListWatchResumesWhileWritten(t *testing.T) {
	const objects, changes = 100, 300
	f, c := newStreamFab(t)
	f.term("a")
	lw := listWatch(t, c)
	_, rv := list(t, lw, metav1.ListOptions{})
	written := make(chan struct{})
	go func() {
		defer close(written)
		prev := map[int]*corev1.ConfigMap{}
		for i := range changes {
			// Fewer changes per object than the stream keeps (8).
			k := i % objects
			o := cm("ns", fmt.Sprint("o", k), fmt.Sprint("u", k), fmt.Sprint(100+i))
			if prev[k] == nil {
				f.added(o)
			} else {
				f.updated(o, prev[k])
			}
			prev[k] = o
		}
	}()
	var got []string
	for n := 0; len(got) < changes; n++ {
		w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch %d from %s after %d events: %v", n, rv, len(got), err)
		}
		for range 1 + n%5 {
			var ev watch.Event
			select {
			case ev = <-w.ResultChan():
			case <-time.After(30 * time.Second):
				t.Fatalf("no event after %d", len(got))
			}
			if ev.Type == watch.Error {
				t.Fatalf("after %d events: %v", len(got), apierrors.FromObject(ev.Object))
			}
			got = append(got, describe(ev.Object))
			rv = rvOf(ev.Object)
		}
		w.Stop()
	}
	<-written
	for i, g := range got {
		if want := fmt.Sprintf("ns/o%d@%d", i%objects, 100+i); g != want {
			t.Fatalf("event %d is %s, want %s", i, g, want)
		}
	}
}

// A watch that comes to a snapshot after compaction removed the items of
// objects that changed since does not sweep them: their newer messages,
// which it reads next, carry them on, to their delete if that came.
func TestListWatchKeepsObjectsWhoseItemWasCompacted(t *testing.T) {
	f, c := newStreamFab(t)
	f.term("a")
	f.added(cm("ns", "a", "u1", "10"))
	f.added(cm("ns", "b", "u2", "11"))
	f.added(cm("ns", "c", "u3", "12"))
	lw := listWatch(t, c)
	_, rv := list(t, lw, metav1.ListOptions{})

	// Written before the watch reads any of it; the stream keeps 8
	// messages per object.
	f.begin("s2")
	f.item("s2", cm("ns", "a", "u1", "10"))
	f.item("s2", cm("ns", "b", "u2", "11"))
	f.item("s2", cm("ns", "c", "u3", "12"))
	f.end("s2", 3)
	var want []string
	b, c3 := cm("ns", "b", "u2", "11"), cm("ns", "c", "u3", "12")
	for i := range 8 {
		nb := cm("ns", "b", "u2", fmt.Sprint(20+i))
		f.updated(nb, b)
		want = append(want, "MODIFIED "+describe(nb))
		b = nb
		if i < 7 {
			nc := cm("ns", "c", "u3", fmt.Sprint(30+i))
			f.updated(nc, c3)
			want = append(want, "MODIFIED "+describe(nc))
			c3 = nc
		}
	}
	f.deleted(cm("ns", "c", "u3", "40"))
	f.added(cm("ns", "end", "u9", "50"))
	want = append(want, "DELETED ns/c@40", "ADDED ns/end@50")
	if got := events(t, startWatch(t, lw, rv, ""), "ns/end@50"); !slices.Equal(got, want) {
		t.Errorf("events %q,\nwant %q", got, want)
	}
	if s := lw.Stats(); s.Swept != 0 || s.Snapshots != 1 {
		t.Errorf("stats %+v: want one snapshot, nothing swept", s)
	}
}

// With a label selector the watch says what the API server would: Added
// when an object comes to match, Deleted when it stops.
func TestListWatchLabelSelector(t *testing.T) {
	f, c := newStreamFab(t)
	f.term("a")
	labelled := func(name, uid, rv, tier string) *corev1.ConfigMap {
		o := cm("ns", name, uid, rv)
		o.Labels = map[string]string{"tier": tier}
		return o
	}
	f.added(labelled("a", "u1", "10", "web"))
	f.added(labelled("b", "u2", "11", "db"))
	lw := listWatch(t, c)
	items, rv := list(t, lw, metav1.ListOptions{LabelSelector: "tier=web"})
	if !slices.Equal(items, []string{"ns/a@10"}) {
		t.Errorf("listed %v", items)
	}
	w := startWatch(t, lw, rv, "tier=web")
	f.updated(labelled("b", "u2", "12", "web"), labelled("b", "u2", "11", "db"))
	f.updated(labelled("a", "u1", "13", "db"), labelled("a", "u1", "10", "web"))
	f.updated(labelled("a", "u1", "14", "db"), labelled("a", "u1", "13", "db"))
	f.deleted(labelled("a", "u1", "15", "db"))
	f.updated(labelled("b", "u2", "16", "web"), labelled("b", "u2", "12", "web"))
	want := []string{"ADDED ns/b@12", "DELETED ns/a@13", "MODIFIED ns/b@16"}
	if got := events(t, w, "ns/b@16"); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "16"}); !apierrors.IsBadRequest(err) {
		t.Errorf("watch with other selectors than the list's: %v, want BadRequest", err)
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{FieldSelector: "data.x=1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("field selector on data: %v, want BadRequest", err)
	}
}

// An example object the scheme does not decode into is refused up front;
// an unstructured one lists into an UnstructuredList.
func TestListWatchExampleObject(t *testing.T) {
	f, c := newStreamFab(t)
	history(f)
	if _, err := c.NewListWatch(Filter{Resource: "configmaps"}, &unstructured.Unstructured{}); err == nil {
		t.Error("an Unstructured example without a kind is accepted")
	}
	ex := &unstructured.Unstructured{}
	ex.SetAPIVersion("v1")
	ex.SetKind("ConfigMap")
	lw, err := c.NewListWatch(Filter{Resource: "configmaps"}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("configmaps decode into *corev1.ConfigMap, yet a list of Unstructured examples worked")
	}
}

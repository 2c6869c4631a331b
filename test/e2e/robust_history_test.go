package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	watchtools "k8s.io/client-go/tools/watch"
)

// historian records the run's history: every version of every object of the
// run's types, in every namespace, from watches of the test's own that
// start before any bridge and talk to the apiserver directly (never
// through the links the nemesis breaks). A RetryWatcher resumes from the
// last resourceVersion it saw across apiserver restarts, so nothing is
// lost; one that cannot resume (its history compacted away, which the
// nemesis avoids by compacting only what every historian has seen) ends the
// recording, and the run fails with it.
type historian struct {
	mu       sync.Mutex
	versions []histVersion
	lastRV   map[string]string // type → the last resourceVersion its watch delivered
	err      error
	stop     []func()
}

// startHistorian lists and watches every type.
func startHistorian(ctx context.Context, dyn dynamic.Interface, types []robustType) (*historian, error) {
	r := &historian{lastRV: map[string]string{}}
	for _, t := range types {
		if err := r.watch(ctx, dyn, t); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *historian) watch(ctx context.Context, dyn dynamic.Interface, t robustType) error {
	ctx, cancel := context.WithCancel(ctx)
	res := dyn.Resource(t.gvr)
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return fmt.Errorf("history: list %s: %w", t.resource, err)
	}
	now := time.Now()
	for i := range list.Items {
		r.add(t, watch.Added, &list.Items[i], now)
	}
	r.mu.Lock()
	r.lastRV[t.typ] = list.GetResourceVersion()
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := list.GetResourceVersion()
		for ctx.Err() == nil {
			err := r.follow(ctx, res, t, rv)
			switch {
			case ctx.Err() != nil:
			case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
				// A new watch cache serves watches only from the
				// resourceVersion it started at (kube-apiserver was
				// restarted): list again and check that nothing changed
				// unseen, then go on from the list.
				if rv, err = r.relist(ctx, res, t); err != nil {
					r.fail(err)
					return
				}
			default:
				r.fail(fmt.Errorf("history: the watch of %s ended: %w", t.resource, err))
				return
			}
		}
	}()
	r.stop = append(r.stop, func() {
		cancel()
		<-done
	})
	return nil
}

// follow records what a RetryWatcher from rv delivers until it ends, and
// returns why it ended.
func (r *historian) follow(ctx context.Context, res dynamic.NamespaceableResourceInterface, t robustType, rv string) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, watchFunc(res.Watch))
	if err != nil {
		return err
	}
	defer rw.Stop()
	for ev := range rw.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				return fmt.Errorf("a %s event with a %T", ev.Type, ev.Object)
			}
			r.add(t, ev.Type, obj, time.Now())
		case watch.Error:
			return apierrors.FromObject(ev.Object)
		}
	}
	return ctx.Err()
}

// relist lists t and checks the list against the recording: every
// object listed must be at the version last recorded of it, and every
// object recorded as existing must be listed. Then nothing was missed
// between the watch that ended and the list, and the recording goes on
// from the list's resourceVersion. The nemesis restarts kube-apiserver
// with the traffic paused and the recording caught up (catchUp), so this
// holds unless the recording is broken.
func (r *historian) relist(ctx context.Context, res dynamic.NamespaceableResourceInterface, t robustType) (string, error) {
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("history: relist %s: %w", t.resource, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	live := map[string]string{} // uid → the last recorded rv of objects that exist
	for _, v := range r.versions {
		if v.typ != t.typ {
			continue
		}
		if v.verb == watch.Deleted {
			delete(live, v.uid)
		} else {
			live[v.uid] = v.rv
		}
	}
	var missed []string
	now := time.Now()
	for i := range list.Items {
		item := &list.Items[i]
		uid := string(item.GetUID())
		if item.GetNamespace() == robustSyncNamespace && live[uid] != item.GetResourceVersion() {
			// catchUp's own write, made while the watch was down: the
			// only one since the last it recorded (one per call).
			verb := watch.Modified
			if live[uid] == "" {
				verb = watch.Added
			}
			r.versions = append(r.versions, histVersion{typ: t.typ, uid: uid, namespace: item.GetNamespace(), name: item.GetName(),
				rv: item.GetResourceVersion(), verb: verb, object: item.Object, at: now})
			live[uid] = item.GetResourceVersion()
		}
		if live[uid] != item.GetResourceVersion() {
			missed = append(missed, fmt.Sprintf("%s/%s uid %s listed at rv %s, last recorded at %q", item.GetNamespace(), item.GetName(), uid, item.GetResourceVersion(), live[uid]))
		}
		delete(live, uid)
	}
	for uid, rv := range live {
		missed = append(missed, fmt.Sprintf("uid %s recorded at rv %s, not listed", uid, rv))
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		return "", fmt.Errorf("history: %s changed while its watch was down (%d objects): %s", t.resource, len(missed), strings.Join(missed[:min(len(missed), 10)], "; "))
	}
	r.lastRV[t.typ] = list.GetResourceVersion()
	return list.GetResourceVersion(), nil
}

func (r *historian) add(t robustType, verb watch.EventType, obj *unstructured.Unstructured, at time.Time) {
	v := histVersion{typ: t.typ, uid: string(obj.GetUID()), namespace: obj.GetNamespace(), name: obj.GetName(),
		rv: obj.GetResourceVersion(), verb: verb, object: obj.Object, at: at}
	r.mu.Lock()
	r.versions = append(r.versions, v)
	r.lastRV[t.typ] = v.rv
	r.mu.Unlock()
}

func (r *historian) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// failed is the error that ended a watch, if one did.
func (r *historian) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// seenUpTo is the lowest of the types' last delivered resourceVersions:
// etcd may be compacted up to it without taking anything from the
// recording.
func (r *historian) seenUpTo() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lowest string
	for _, rv := range r.lastRV {
		if lowest == "" || cmpRV(rv, lowest) < 0 {
			lowest = rv
		}
	}
	return lowest
}

// madeAfter is when the historian saw the first version of type typ
// newer than rv (a watch delivers a type's versions in order).
func (r *historian) madeAfter(typ, rv string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.versions {
		if v.typ == typ && cmpRV(v.rv, rv) > 0 {
			return v.at, true
		}
	}
	return time.Time{}, false
}

// snapshot is the history so far, each type's versions in the order its
// watch delivered them.
func (r *historian) snapshot(writes []write) *history {
	r.mu.Lock()
	vs := append([]histVersion(nil), r.versions...)
	r.mu.Unlock()
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].typ < vs[j].typ })
	return &history{versions: vs, writes: writes}
}

// robustSyncNamespace holds one object per type that catchUp writes.
const robustSyncNamespace = "robust-sync"

// catchUp writes each type's sync object and waits until the historian has
// delivered that write: every earlier version of the type is then
// recorded too (a watch delivers in resourceVersion order). The nemesis
// calls it, with the traffic paused, before it restarts the apiserver (a
// new watch cache serves watches only from the resourceVersion it
// started at: a historian still behind would get 410 Gone and lose
// versions) and before it compacts etcd.
func (r *historian) catchUp(ctx context.Context, dyn dynamic.Interface, types []robustType) error {
	for _, t := range types {
		res := dyn.Resource(t.gvr).Namespace(robustSyncNamespace)
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": t.apiVersion, "kind": t.kind, "metadata": map[string]any{"name": "sync"}}}
		setPayload(obj, time.Now().Format(time.RFC3339Nano))
		got, err := res.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			if got, err = res.Get(ctx, "sync", metav1.GetOptions{}); err == nil {
				setPayload(got, time.Now().Format(time.RFC3339Nano))
				got, err = res.Update(ctx, got, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("history: write the sync %s: %w", t.resource, err)
		}
		want := got.GetResourceVersion()
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.err != nil || cmpRV(r.lastRV[t.typ], want) >= 0, nil
		})
		if err != nil {
			return fmt.Errorf("history: the watch of %s did not deliver resourceVersion %s within a minute: %w", t.resource, want, err)
		}
		if err := r.failed(); err != nil {
			return err
		}
	}
	return nil
}

func (r *historian) close() {
	for _, stop := range r.stop {
		stop()
	}
	r.stop = nil
}

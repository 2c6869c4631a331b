package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
)

// ledger is every change the apiserver made to the ConfigMaps of one
// namespace, in order, from a watch of the test's own that starts before
// any bridge: what the bridges could observe, independent of them and of
// the churn's own bookkeeping.
type ledger struct {
	mu      sync.Mutex
	changes []observedChange
	err     error
	done    chan struct{}
}

// observedChange is one watch event.
type observedChange struct {
	verb      watch.EventType // Added, Modified or Deleted
	uid, name string
	rv        string // for Deleted, the resourceVersion of the deletion
}

// watchFunc adapts a function to cache.WatcherWithContext.
type watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watchFunc) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, opts)
}

// watchConfigMaps starts the ledger of h's namespace. The namespace must
// hold no ConfigMaps yet. A RetryWatcher resumes from the last
// resourceVersion it saw, so a closed watch loses nothing; an error it
// cannot resume from (the history compacted away) ends the ledger, and
// the test fails when it reads it.
func (h *harness) watchConfigMaps() *ledger {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := h.cs.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		h.t.Fatalf("ledger: list configmaps: %v", err)
	}
	if len(list.Items) > 0 {
		cancel()
		h.t.Fatalf("ledger: namespace %s already has %d configmaps", h.ns, len(list.Items))
	}
	cms := h.cs.CoreV1().ConfigMaps(h.ns)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, watchFunc(cms.Watch))
	if err != nil {
		cancel()
		h.t.Fatalf("ledger: watch configmaps: %v", err)
	}
	l := &ledger{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range rw.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					l.fail(fmt.Errorf("ledger: %s event with a %T", ev.Type, ev.Object))
					return
				}
				l.mu.Lock()
				l.changes = append(l.changes, observedChange{verb: ev.Type, uid: string(cm.UID), name: cm.Name, rv: cm.ResourceVersion})
				l.mu.Unlock()
			case watch.Error:
				l.fail(fmt.Errorf("ledger: watch ended: %w", apierrors.FromObject(ev.Object)))
				return
			}
		}
	}()
	h.t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-l.done
	})
	return l
}

func (l *ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// upTo waits until the ledger's last change of every name gives want
// (subject → resourceVersion, by h.cmSubject; absent: deleted or never
// created) and returns the changes so far.
func (l *ledger) upTo(h *harness, want map[string]string) []observedChange {
	h.t.Helper()
	var diff string
	var changes []observedChange
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		var err error
		changes, err = append([]observedChange(nil), l.changes...), l.err
		l.mu.Unlock()
		if err != nil {
			return false, err
		}
		got := map[string]string{}
		for _, c := range changes {
			if c.verb == watch.Deleted {
				delete(got, h.cmSubject(h.ns, c.name))
			} else {
				got[h.cmSubject(h.ns, c.name)] = c.rv
			}
		}
		diff = diffState(got, want)
		return diff == "", nil
	})
	if wait.Interrupted(err) {
		h.t.Fatalf("the ledger's watch does not reach the apiserver's list after %v: %s", convergeTimeout, diff)
	} else if err != nil {
		h.t.Fatal(err)
	}
	return changes
}

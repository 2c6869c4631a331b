package consume_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// checkedListWatch stands between a reflector and a ListWatch: it sets a
// label selector, as an informer factory's tweak does; it ends every
// watch after a few events (1 to 5, in turn), so that the reflector
// watches again from the last resourceVersion it got and the ListWatch
// resumes; it answers some Watch calls with 410 Gone, so that the
// reflector lists again; and it checks the watch events against what the
// reflector holds, as an apiserver's watch would have them.
type checkedListWatch struct {
	*consume.ListWatch
	selector string
	gone     map[int]bool

	mu      sync.Mutex
	lists   int
	watches int
	swept   uint64            // by the sessions before the current one
	held    map[string]string // key → resourceVersion, per the lists and events delivered
	errs    []string
	// dropped says, per list, the objects held before it that it does
	// not have: the reflector reports them deleted. That is right for an
	// object deleted or relabelled meanwhile, and what to look at when a
	// NATS informer reports a delete the apiserver's did not.
	dropped []string
	uids    map[string]string // key → uid held
}

// goneAt are Watch calls to answer with 410 Gone.
var goneAt = map[int]bool{20: true, 100: true, 200: true}

// newCheckedListWatch wraps lw; gone are the Watch calls (from 1) to
// answer with 410 Gone.
func newCheckedListWatch(lw *consume.ListWatch, selector string, gone map[int]bool) *checkedListWatch {
	return &checkedListWatch{ListWatch: lw, selector: selector, gone: gone}
}

func (c *checkedListWatch) counts() (lists, watches int, swept uint64) {
	s := c.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists, c.watches, c.swept + s.Swept
}

func (c *checkedListWatch) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs
}

func (c *checkedListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *checkedListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *checkedListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	o.LabelSelector = c.selector
	c.newSession()
	list, err := c.ListWatch.ListWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	c.listed(items, list.(metav1.ListInterface).GetResourceVersion())
	return list, nil
}

// newSession counts the sweeps of the session a List or a watch-list
// ends: the counters start over with every one.
func (c *checkedListWatch) newSession() {
	s := c.Stats()
	c.mu.Lock()
	c.swept += s.Swept
	c.mu.Unlock()
}

// listed takes items, a List's or a watch-list's initial objects at
// resourceVersion rv, as what the reflector holds.
func (c *checkedListWatch) listed(items []runtime.Object, rv string) {
	stats := c.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists++

	before := c.held
	c.held = map[string]string{}
	for _, obj := range items {
		m := obj.(metav1.Object)
		c.held[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		c.uid(m)
	}
	for k, heldRV := range before {
		if _, ok := c.held[k]; !ok {
			c.dropped = append(c.dropped, fmt.Sprintf("list %d (at %s; %+v) drops %s (uid %s), held at %s", c.lists, rv, stats, k, c.uids[k], heldRV))
		}
	}
}

// drops returns what the lists dropped (see dropped).
func (c *checkedListWatch) drops() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

func (c *checkedListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.LabelSelector = c.selector
	c.mu.Lock()
	c.watches++
	n := c.watches
	c.mu.Unlock()
	if c.gone[n] {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("test: watch %d is gone", n))
	}
	// A watch-list (the reflector's default) lists by streaming: its
	// initial events, up to the bookmark that ends them, are not cut.
	initial := o.SendInitialEvents != nil && *o.SendInitialEvents
	if initial {
		c.newSession()
	}
	w, err := c.ListWatch.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	cw := &cutWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	progress := func() uint64 { return c.Stats().LastSeq }
	if n%3 != 0 {
		progress = nil
	}
	check := c.check
	if initial {
		check = c.streamed()
	}
	go cw.run(1+n%5, check, progress)
	return cw, nil
}

// streamed checks the events of a watch-list: the initial objects, taken
// as a list at the bookmark that ends them, and then what follows as
// check does. It reports whether the initial events have ended.
func (c *checkedListWatch) streamed() func(watch.Event) bool {
	var items []runtime.Object
	ended := false
	return func(ev watch.Event) bool {
		switch {
		case ended:
			return c.check(ev)
		case ev.Type == watch.Added:
			items = append(items, ev.Object)
		case ev.Type == watch.Bookmark:
			m := ev.Object.(metav1.Object)
			if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				c.listed(items, m.GetResourceVersion())
				ended = true
				return true
			}
		default:
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Sprintf("%s among a watch-list's initial events", ev.Type))
			c.mu.Unlock()
		}
		return false
	}
}

// check records what an apiserver's watch would not send. It reports
// that the event counts towards the watch's cut.
func (c *checkedListWatch) check(ev watch.Event) bool {
	if ev.Type == watch.Error {
		return true
	}
	if ev.Type == watch.Bookmark {
		c.mu.Lock()
		c.errs = append(c.errs, "a bookmark after a watch-list's initial events")
		c.mu.Unlock()
		return true
	}
	m := ev.Object.(metav1.Object)
	k, rv := m.GetNamespace()+"/"+m.GetName(), m.GetResourceVersion()
	c.mu.Lock()
	defer c.mu.Unlock()

	prev, held := c.held[k]
	switch {
	case ev.Type == watch.Added && held:
		c.errs = append(c.errs, fmt.Sprintf("Added %s@%s while held at %s", k, rv, prev))
	case ev.Type == watch.Modified && !held:
		c.errs = append(c.errs, fmt.Sprintf("Modified %s@%s while not held", k, rv))
	case ev.Type == watch.Modified && prev == rv:
		c.errs = append(c.errs, fmt.Sprintf("Modified %s@%s: the resourceVersion held", k, rv))
	case ev.Type == watch.Deleted && !held:
		c.errs = append(c.errs, fmt.Sprintf("Deleted %s@%s while not held", k, rv))
	}
	if ev.Type == watch.Deleted {
		delete(c.held, k)
	} else {
		c.held[k] = rv
		c.uid(m)
	}
	return true
}

// uid records the uid of the object held at m's key.
func (c *checkedListWatch) uid(m metav1.Object) {
	if c.uids == nil {
		c.uids = map[string]string{}
	}
	c.uids[m.GetNamespace()+"/"+m.GetName()] = string(m.GetUID())
}

// cutWatch passes on the events of a watch and ends after a number of
// them.
type cutWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

// run passes on n events that check counts. Before it stops the watch,
// it waits a little (given progress, the stream sequence the ListWatch
// applied up to) for the ListWatch to apply one more message, so that the
// events it makes wait in the ListWatch's queue for the next watch: a
// reflector may stop a watch at any moment.
func (w *cutWatch) run(n int, check func(watch.Event) bool, progress func() uint64) {
	defer close(w.out)
	defer w.inner.Stop()
	var at uint64
	for n > 0 {
		var ev watch.Event
		select {
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			ev = e
		case <-w.stop:
			return
		}
		if progress != nil {
			at = progress()
		}
		select {
		case w.out <- ev:
			if check(ev) {
				n--
			}
		case <-w.stop:
			return
		}
	}
	if progress == nil {
		return
	}
	// A little: if the ListWatch applies nothing more, stop anyway.
	_ = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return progress() > at, nil
	})
}

func (w *cutWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *cutWatch) ResultChan() <-chan watch.Event { return w.out }

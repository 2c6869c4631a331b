package consume

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// session is one List of a ListWatch and the watches that follow it: an
// Applier holding the type's state, and what the reflector was told of it.
//
// The Applier calls the session as its event handler; the session turns
// each change into the watch event that brings the reflector's store to
// the same state, and queues it. Only one goroutine at a time uses a
// session: the bootstrap's, then one watch's after the other.
type session struct {
	f           filter
	sel         selectors
	exampleType reflect.Type
	exampleGVK  schema.GroupVersionKind
	a           *Applier

	// pos is the stream sequence up to which messages were applied.
	pos uint64
	// listRV is the List's resourceVersion, lastRV that of the object of
	// the last event delivered ("" before the first).
	listRV, lastRV string
	// queue holds the events derived and not delivered yet.
	queue []watch.Event
	// visible maps the key of every object the reflector was told of (an
	// Added and no Deleted since) to the resourceVersion it was told. It
	// is nil without selectors: the reflector is then told of every
	// object the Applier holds, at the version it holds, and the
	// Applier's handler calls say what it was told (the map cost 82 B
	// per object, 4% of a 2 KB ConfigMap's: BenchmarkInformerHeap).
	visible map[string]string
	// items is the list, until it is handed out.
	items []runtime.Object
	// err is what stopped the session; it cannot go on.
	err error

	active *streamWatch
}

func newSession(f filter, sel selectors, example runtime.Object) *session {
	s := &session{f: f, sel: sel, exampleType: reflect.TypeOf(example), exampleGVK: example.GetObjectKind().GroupVersionKind()}
	if !sel.everything() {
		s.visible = map[string]string{}
	}
	return s
}

// bootstrap rebuilds the state with st, which must not have run: st runs
// until it has synced, and from then on every change it applies reaches
// the session. Changes applied before st stops are queued.
func (s *session) bootstrap(ctx context.Context, st *State) error {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(rctx) }()
	err := st.WaitForSync(ctx)
	if err == nil {
		err = st.a.attach(s.f.ref, s, s.list)
	}
	cancel()
	if rerr := <-done; err == nil {
		err = rerr
	}
	if err == nil {
		err = s.err
	}
	if err != nil {
		return fmt.Errorf("consume: list %s: %w", s.f, err)
	}
	s.a = st.a
	s.pos = st.a.Stats().LastSeq
	return nil
}

// list takes the objects the Applier holds at stream sequence seq as the
// List's.
func (s *session) list(objs []any, seq uint64) {
	s.listRV = listRV(seq)
	for _, obj := range objs {
		m, ok := s.accept(obj)
		if ok && s.sel.matches(m) {
			s.items = append(s.items, obj.(runtime.Object))
			if s.visible != nil {
				s.visible[key(m)] = m.GetResourceVersion()
			}
		}
	}
}

// queueInitial puts an Added event for every listed object before the
// queued events: a watch from "" or "0" starts with them. With
// endBookmark they are followed by the bookmark that ends a watch-list's
// initial events.
func (s *session) queueInitial(endBookmark bool) {
	initial := make([]watch.Event, 0, len(s.items)+1+len(s.queue))
	for _, obj := range s.items {
		initial = append(initial, watch.Event{Type: watch.Added, Object: obj})
	}
	if endBookmark {
		initial = append(initial, watch.Event{Type: watch.Bookmark, Object: s.initialEventsEnd()})
	}
	s.queue, s.items = append(initial, s.queue...), nil
}

// initialEventsEnd is the bookmark that ends the initial events, as the
// API server sends it: an object of the watched type holding only the
// list's resourceVersion and the k8s.io/initial-events-end annotation.
func (s *session) initialEventsEnd() runtime.Object {
	obj := reflect.New(s.exampleType.Elem()).Interface().(runtime.Object)
	obj.GetObjectKind().SetGroupVersionKind(s.exampleGVK)
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(s.listRV)
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

// resumes reports whether a watch from rv goes on where the reflector is.
// A reflector watches from the resourceVersion of the last object it
// received, or from the list's when it received none it may trust.
func (s *session) resumes(rv string) bool {
	return s.err == nil && (rv == s.listRV || s.lastRV != "" && rv == s.lastRV)
}

// accept reads an object's metadata; an object not of the example's type
// stops the session, since the reflector would drop its events.
func (s *session) accept(obj any) (metav1.Object, bool) {
	if reflect.TypeOf(obj) != s.exampleType {
		if s.err == nil {
			s.err = fmt.Errorf("%w: %s decodes into %T, not %s like the example object (WithScheme decides)", ErrBadOption, s.f.ref, obj, s.exampleType)
		}
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return nil, false
	}
	return m, true
}

// OnAdd, OnUpdate and OnDelete receive the Applier's changes.
func (s *session) OnAdd(obj any, _ bool) { s.upsert(nil, obj) }
func (s *session) OnUpdate(old, obj any) { s.upsert(old, obj) }

func (s *session) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := s.accept(obj)
	if !ok {
		return
	}
	if s.visible == nil {
		s.push(watch.Deleted, obj)
		return
	}
	k := key(m)
	if _, told := s.visible[k]; !told {
		return
	}
	delete(s.visible, k)
	s.push(watch.Deleted, obj)
}

// upsert tells the reflector of an object's new state, as the API server
// would under the selectors: Added when it enters them, Modified when its
// resourceVersion changed, Deleted when it leaves them. old is the
// Applier's previous state of the object, nil for an add.
func (s *session) upsert(old, obj any) {
	m, ok := s.accept(obj)
	if !ok {
		return
	}
	if s.visible == nil {
		switch {
		case old == nil:
			s.push(watch.Added, obj)
		case rvOf(old) != m.GetResourceVersion():
			s.push(watch.Modified, obj)
		}
		return
	}
	k := key(m)
	rv, told := s.visible[k]
	match := s.sel.matches(m)
	switch {
	case match && !told:
		s.visible[k] = m.GetResourceVersion()
		s.push(watch.Added, obj)
	case match && rv != m.GetResourceVersion():
		s.visible[k] = m.GetResourceVersion()
		s.push(watch.Modified, obj)
	case !match && told:
		delete(s.visible, k)
		s.push(watch.Deleted, obj)
	}
}

func (s *session) push(t watch.EventType, obj any) {
	s.queue = append(s.queue, watch.Event{Type: t, Object: obj.(runtime.Object)})
}

// attach adds h to the handlers of type ref and calls init with the
// objects held and the stream sequence they are consistent at, all under
// the lock: h gets every change after that state.
func (a *Applier) attach(ref contract.Type, h cache.ResourceEventHandler, init func(objs []any, seq uint64)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.typeOf(ref)
	if t == nil {
		return fmt.Errorf("%w: no filter names %s", ErrBadOption, ref)
	}
	t.handlers = append(t.handlers, h)
	init(t.indexer.List(), a.stats.LastSeq)
	return nil
}

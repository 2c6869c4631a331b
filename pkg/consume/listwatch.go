package consume

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatch is a client-go cache.ListerWatcher of one type (optionally one
// namespace) backed by a kubebridge stream instead of the API server, so
// that a reflector, and the shared informer around it, fill their cache
// from NATS.
//
// List rebuilds the type's state as a State does (BootstrapMode, the term
// rule, the contract checks) and returns it as a typed list (the list type
// of the example object: *corev1.ConfigMapList, an
// *unstructured.UnstructuredList) whose resourceVersion is the stream
// sequence the list is consistent at. Watch applies the messages that
// follow and turns the changes they make into watch events: Added,
// Modified (only when the resourceVersion differs, so snapshot items that
// change nothing produce nothing), Deleted (deletes, sweeps, and an object
// that leaves the label or field selector). Fenced and stale events
// produce nothing. Before a snapshot's end marker sweeps an object, the
// ListWatch reads the object's last message: a watch behind the stream
// may find the object's item removed by compaction, for newer messages of
// the object that it reads next, and must not report a delete and an add
// that never happened.
//
// # Resuming
//
// A reflector watches again from the resourceVersion of the last object it
// received: the API server's, not a stream position. So a ListWatch keeps
// its own position: the stream sequence up to which it applied messages,
// and the watch events it derived but did not deliver yet (a watch that
// stops in the middle of them leaves them for the next). A Watch whose
// resourceVersion is that of the last event delivered, or the last List's,
// goes on from there; a Watch from "" or "0" lists again and starts with
// an Added event per object, as the API server does; any other
// resourceVersion gets 410 Gone, and the reflector lists again. Each List
// starts over from the stream.
//
// # Watch-list streaming
//
// A Watch with sendInitialEvents (client-go's WatchListClient, on by
// default) starts over from a new bootstrap, as a List does, and streams
// the state instead of returning it: an Added event per object, then a
// Bookmark annotated k8s.io/initial-events-end at the resourceVersion the
// state is consistent at, then the changes that follow, as the API server
// does. The reflector's store then holds the ListWatch's own objects: no
// list is built, and no copy of each object made from it.
//
// One ListWatch serves one reflector: calls must not overlap (a Watch
// stops the previous one), as a reflector makes them. Nothing is read
// between watches.
type ListWatch struct {
	c       *Client
	f       filter
	opts    stateOptions
	example runtime.Object

	// mu serializes List and Watch; s is the last List's session.
	mu sync.Mutex
	s  *session
	// applier is the current session's, for Stats.
	applier atomic.Pointer[Applier]
}

var (
	_ cache.ListerWatcher            = (*ListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*ListWatch)(nil)
)

// NewListWatch returns a ListWatch of the objects f selects. example is an
// object of the type as the client decodes it: a typed object such as
// &corev1.ConfigMap{} when the client's scheme knows the kind, else an
// *unstructured.Unstructured with apiVersion and kind set; it gives the
// list type.
func (c *Client) NewListWatch(f Filter, example runtime.Object, opts ...ListWatchOption) (*ListWatch, error) {
	pf, err := parseFilter(f)
	if err != nil {
		return nil, err
	}
	o, err := listWatchOpts(opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.newList(example); err != nil {
		return nil, err
	}
	return &ListWatch{c: c, f: pf, opts: o, example: example}, nil
}

// Stats returns the counters of the Applier of the last List or
// watch-list (they start over at every one); zero before the first.
func (lw *ListWatch) Stats() Stats {
	if a := lw.applier.Load(); a != nil {
		return a.Stats()
	}
	return Stats{Violations: map[ViolationKind]uint64{}}
}

// List lists with context.Background().
//
// Deprecated: use ListWithContext.
func (lw *ListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// Watch watches with context.Background().
//
// Deprecated: use WatchWithContext.
func (lw *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// ListWithContext rebuilds the state from the stream and returns the
// objects that match options' label and field selectors. Limit is ignored
// (the whole list comes at once, as from the API server's watch cache);
// resourceVersion is ignored too, since the newest state is at least as
// fresh as any. The field selector may use metadata.name and
// metadata.namespace.
func (lw *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	sel, err := parseSelectors(options)
	if err != nil {
		return nil, err
	}
	if options.Continue != "" {
		return nil, apierrors.NewBadRequest("consume: a ListWatch lists in one piece; it issued no continue token")
	}
	if options.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		return nil, apierrors.NewBadRequest("consume: a ListWatch lists the newest state only; resourceVersionMatch=Exact is not served")
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	s, err := lw.relist(ctx, sel)
	if err != nil {
		return nil, err
	}
	list, err := lw.c.newList(lw.example)
	if err != nil {
		return nil, err
	}
	if err := lw.c.fillList(list, s.items, s.listRV); err != nil {
		return nil, err
	}
	s.items = nil
	return list, nil
}

// relist ends the current session and starts one from a new bootstrap.
func (lw *ListWatch) relist(ctx context.Context, sel selectors) (*session, error) {
	lw.endSession()
	guard := &sweepGuard{c: lw.c, ctx: ctx}
	o := lw.opts
	o.keepOnSweep, o.noNamespaceIndex = guard.keep, true
	st, err := lw.c.newState([]Filter{lw.f.Filter}, o)
	if err != nil {
		return nil, err
	}
	s := newSession(lw.f, sel, lw.example)
	if err := s.bootstrap(ctx, st); err != nil {
		return nil, err
	}
	lw.s = s
	lw.applier.Store(st.a)
	return s, nil
}

// endSession stops the current session's watch, if any, and forgets it.
func (lw *ListWatch) endSession() {
	if lw.s != nil {
		lw.s.stopWatch()
		lw.s = nil
	}
}

// WatchWithContext returns the watch events that follow the last List, or
// the last event delivered (see Resuming); with sendInitialEvents, those
// of a new bootstrap first (see Watch-list streaming). It honours
// options' timeoutSeconds: the watch then ends, as the API server ends
// it, and the reflector watches again from where it was. The only
// bookmark sent is the one that ends the initial events.
func (lw *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	sel, err := parseSelectors(options)
	if err != nil {
		return nil, err
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	rv := options.ResourceVersion
	s := lw.s
	if s != nil {
		// Before anything else: the session is the watch's until then.
		s.stopWatch()
	}
	streamInitial := options.SendInitialEvents != nil && *options.SendInitialEvents
	switch {
	case !streamInitial && s != nil && s.resumes(rv):
		if s.sel.String() != sel.String() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("consume: watch with selectors %q after a list with %q", sel, s.sel))
		}
	case streamInitial || rv == "" || rv == "0":
		// A watch-list starts over whatever its resourceVersion: the
		// newest state is not older than the one the reflector asks for.
		if s, err = lw.relist(ctx, sel); err != nil {
			return nil, err
		}
		s.queueInitial(streamInitial)
	default:
		// Gone, as from the API server: the reflector lists again.
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("consume: resourceVersion %s is neither the last List's nor that of the last event this ListWatch delivered", rv))
	}
	return s.watch(ctx, lw.c, options.TimeoutSeconds)
}

// listRV is the resourceVersion of a list consistent at stream sequence
// seq.
func listRV(seq uint64) string { return strconv.FormatUint(seq, 10) }

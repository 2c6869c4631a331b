package informers

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Scope narrows what one resource type is watched for.
type Scope struct {
	// Namespaces to watch; empty means all. Ignored for cluster-scoped types.
	Namespaces    []string
	LabelSelector string
	FieldSelector string
	// Match and IgnoreFields narrow and project what is published of the
	// objects watched (the type's rules). The informer does not apply
	// them; they are stamped on snapshot begin markers so that consumers
	// compare within the same scope.
	Match        string
	IgnoreFields [][]string
}

// Queue receives changes from informer handlers. Add must not block for
// long and must not refuse: the handler runs on the informer's notification
// goroutine, and a refused change would be lost. Implementations keep state
// per object (as client-go's DeltaFIFO does) so that memory is bounded by the
// number of objects, not by how long the consumer is slow.
type Queue interface {
	Add(Change)
}

// Clients are the API clients informers are built from. Typed serves
// built-in types (protobuf on the wire); Dynamic serves everything else.
type Clients struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	// Config is Typed's configuration. A Source WithOwns builds its typed
	// informers' list and watch from it, to filter them.
	Config *rest.Config
}

// Source runs the informers of one resource type (one per namespace when
// several are configured) and reports their callbacks as Changes.
type Source struct {
	Resource *Resource
	Scope    Scope
	// Typed tells whether the typed informer factory serves this type.
	Typed bool

	queue     Queue
	now       func() time.Time
	logger    klog.Logger
	observer  Observer
	informers []cache.SharedIndexInformer
	starters  []func(stop <-chan struct{})
	// owns, if set, is the part of the type this Source watches.
	owns Owns
	// shardSelector, if set, is sent with the list and watch of every
	// namespace (KEP-5866), for the apiserver to leave out what owns
	// refuses; serverFiltered records whether the last list was filtered.
	shardSelector  *ShardSelector
	serverFiltered atomic.Int32
	// unstructured keeps a dynamic type's objects as Unstructured in the
	// cache, instead of Compact (WithUnstructuredCache).
	unstructured bool
	// trims are what the transform does (WithCompactDecoding).
	trims *TransformOptions
	// compactTyped caches a typed type's objects as Compact
	// (WithCompactTyped).
	compactTyped bool
}

// Observer is told what a Source sees. It must be safe for concurrent use
// and must not block.
type Observer interface {
	Observed(r *Resource, v Verb)
	WatchError(r *Resource, err error)
}

// ForeignObserver is an Observer also told of the objects of other shards
// that a Source WithOwns received from the apiserver and dropped: all of
// them when the apiserver ignores the shard selector, those of namespaces
// newer than the selector when it applies it.
//
// ForeignCounter is asked once per informer; the function it returns is
// called on the watch's goroutine for every drop, so it should do no more
// than add.
type ForeignObserver interface {
	ForeignCounter(r *Resource) func(n int)
}

type nopObserver struct{}

func (nopObserver) Observed(*Resource, Verb)    {}
func (nopObserver) WatchError(*Resource, error) {}

// WithObserver reports every change offered and every watch error.
func WithObserver(o Observer) SourceOption {
	return func(s *Source) error { s.observer = o; return nil }
}

// SourceOption configures a Source.
type SourceOption func(*Source) error

// WithUnstructuredCache caches a dynamic type's objects as Unstructured
// rather than Compact: for a caller that reads every object's content
// (the bridge's rules), which a Compact object would decode from its
// JSON at every read.
func WithUnstructuredCache() SourceOption {
	return func(s *Source) error { s.unstructured = true; return nil }
}

// WithCompactDecoding says that the Source's transform is trims'
// (trims.Transform()): a dynamic type cached as Compact objects is then
// decoded straight from the apiserver's JSON into them, trimmed as trims
// says, instead of into an Unstructured tree that the transform trims and
// that is then encoded again (about four times the CPU per object;
// BenchmarkCompactDecoding). The cached objects are the same, byte for
// byte. It needs Clients.Config.
func WithCompactDecoding(trims TransformOptions) SourceOption {
	return func(s *Source) error { s.trims = &trims; return nil }
}

// WithCompactTyped caches the objects of a type the typed clients serve
// as Compact too, still decoded from protobuf: their JSON, written once
// when they enter the cache, and the metadata, instead of the typed
// object. For a caller that writes every object as JSON (the bridge, at
// each event that carries it as the new or the old object); the cache
// then takes about what the typed objects take (docs/memory.md).
func WithCompactTyped() SourceOption {
	return func(s *Source) error { s.compactTyped = true; return nil }
}

// WithClock sets the clock that stamps ObservedAt (tests pin it).
func WithClock(now func() time.Time) SourceOption {
	return func(s *Source) error { s.now = now; return nil }
}

// NewSource builds the informers for res in scope, with transform applied
// before objects enter the cache and every callback offered to queue.
// Informers are not started until Run.
func NewSource(clients Clients, res *Resource, scope Scope, transform cache.TransformFunc, queue Queue, opts ...SourceOption) (*Source, error) {
	s := &Source{Resource: res, Scope: scope, queue: queue, now: time.Now, logger: klog.Background().WithValues("resource", res.String()), observer: nopObserver{}}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	namespaces := scope.Namespaces
	owns := s.owns
	if owns != nil && res.Namespaced && len(namespaces) > 0 {
		// The namespaces are named: watch only those owns accepts, each
		// with a list and watch of its own, which the apiserver filters.
		// Ownership is decided by namespace, so every object of an owned
		// namespace is this Source's; and no informer at all when none is
		// (the type then has no objects here).
		namespaces = slices.DeleteFunc(slices.Clone(namespaces), func(ns string) bool { return !owns(ns, "") })
		owns = nil
		if len(namespaces) == 0 {
			return s, nil
		}
	}
	if !res.Namespaced || len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	tweak := s.loggingRelists(func(o *metav1.ListOptions) {
		o.LabelSelector = scope.LabelSelector
		o.FieldSelector = scope.FieldSelector
	})
	// One log of failures for the type, over all its informers.
	failures := &watchErrors{now: s.now}
	for _, ns := range namespaces {
		newInf := newInformer
		if owns != nil {
			var sel *ShardSelector
			if ns == metav1.NamespaceAll && res.Namespaced {
				sel = s.shardSelector
			}
			newInf = ownedInformer(owns, sel, s.listFiltered, s.foreignOf(res))
		}
		inf, start, typed, err := newInf(clients, res, ns, tweak, transform, cacheForm{compact: !s.unstructured, trims: s.trims, typed: s.compactTyped})
		if err != nil {
			return nil, err
		}
		s.Typed = typed
		if _, err := inf.AddEventHandler(s.handler()); err != nil {
			return nil, fmt.Errorf("%s: add handler: %w", res, err)
		}
		if err := inf.SetWatchErrorHandlerWithContext(s.watchErrorHandler(failures)); err != nil {
			return nil, fmt.Errorf("%s: set watch error handler: %w", res, err)
		}
		s.informers = append(s.informers, inf)
		s.starters = append(s.starters, start)
	}
	return s, nil
}

// Run starts the informers; they stop when ctx is done.
func (s *Source) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", s.Resource.String())
	// Set before the informers start, so handlers see it without a lock.
	s.logger = logger
	for _, start := range s.starters {
		start(ctx.Done())
	}
}

// HasSynced reports whether every informer has completed its initial list.
func (s *Source) HasSynced() bool {
	for _, inf := range s.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// Keys returns the cache keys (namespace/name, or name) of every cached
// object. A snapshot lists keys up front and reads each object when it is
// its turn, so the object published is the newest the cache has.
func (s *Source) Keys() []string {
	if len(s.informers) == 1 {
		return s.informers[0].GetIndexer().ListKeys()
	}
	var keys []string
	for _, inf := range s.informers {
		keys = append(keys, inf.GetIndexer().ListKeys()...)
	}
	return keys
}

// Get returns the cached object under key, if it is still there. The object
// is the cache's own.
func (s *Source) Get(key string) (runtime.Object, bool) {
	for _, inf := range s.informers {
		o, ok, err := inf.GetIndexer().GetByKey(key)
		if err != nil || !ok {
			continue
		}
		if obj, ok := o.(runtime.Object); ok {
			return obj, true
		}
	}
	return nil, false
}

// List returns every cached object. The objects are the cache's own.
func (s *Source) List() []runtime.Object {
	var out []runtime.Object
	for _, inf := range s.informers {
		for _, o := range inf.GetIndexer().List() {
			if obj, ok := o.(runtime.Object); ok {
				out = append(out, obj)
			}
		}
	}
	return out
}

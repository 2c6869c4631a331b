package informers

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Scope narrows what one resource type is watched for.
type Scope struct {
	// Namespaces to watch; empty means all. Ignored for cluster-scoped types.
	Namespaces    []string
	LabelSelector string
	FieldSelector string
}

// Queue receives changes from informer handlers. TryPut must not block: the
// handler runs on the informer's notification goroutine.
type Queue interface {
	TryPut(Change) bool
}

// Clients are the API clients informers are built from. Typed serves
// built-in types (protobuf on the wire); Dynamic serves everything else.
type Clients struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
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
	dirty     atomic.Bool
	dropped   atomic.Int64
}

// Observer is told what a Source sees. It must be safe for concurrent use
// and must not block.
type Observer interface {
	Observed(r *Resource, v Verb)
	Dropped(r *Resource)
	WatchError(r *Resource, err error)
}

type nopObserver struct{}

func (nopObserver) Observed(*Resource, Verb)    {}
func (nopObserver) Dropped(*Resource)           {}
func (nopObserver) WatchError(*Resource, error) {}

// WithObserver reports every change offered, dropped, and every watch error.
func WithObserver(o Observer) SourceOption {
	return func(s *Source) error { s.observer = o; return nil }
}

// SourceOption configures a Source.
type SourceOption func(*Source) error

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
	if !res.Namespaced || len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = scope.LabelSelector
		o.FieldSelector = scope.FieldSelector
	}
	for _, ns := range namespaces {
		inf, start, typed, err := newInformer(clients, res, ns, tweak, transform)
		if err != nil {
			return nil, err
		}
		s.Typed = typed
		if _, err := inf.AddEventHandler(s.handler()); err != nil {
			return nil, fmt.Errorf("%s: add handler: %w", res, err)
		}
		s.informers = append(s.informers, inf)
		s.starters = append(s.starters, start)
	}
	return s, nil
}

func newInformer(clients Clients, res *Resource, ns string, tweak func(*metav1.ListOptions), transform cache.TransformFunc) (cache.SharedIndexInformer, func(<-chan struct{}), bool, error) {
	if clients.Typed != nil {
		opts := []kinformers.SharedInformerOption{kinformers.WithNamespace(ns), kinformers.WithTweakListOptions(tweak)}
		if transform != nil {
			opts = append(opts, kinformers.WithTransform(transform))
		}
		f := kinformers.NewSharedInformerFactoryWithOptions(clients.Typed, 0, opts...)
		if generic, err := f.ForResource(res.GVR); err == nil {
			return generic.Informer(), f.Start, true, nil
		}
	}
	if clients.Dynamic == nil {
		return nil, nil, false, fmt.Errorf("%s: no typed informer and no dynamic client", res)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(clients.Dynamic, 0, ns, tweak)
	inf := f.ForResource(res.GVR).Informer()
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			return nil, nil, false, fmt.Errorf("%s: set transform: %w", res, err)
		}
	}
	return inf, f.Start, false, nil
}

// Run starts the informers; they stop when ctx is done.
func (s *Source) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("resource", s.Resource.String())
	// Set before the informers start, so handlers see it without a lock.
	s.logger = logger
	for _, inf := range s.informers {
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			s.observer.WatchError(s.Resource, err)
			logger.Info("Watch failed; the informer will relist", "err", err)
			cache.DefaultWatchErrorHandler(ctx, r, err)
		})
	}
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

// List returns every cached object. The objects are the cache's own.
func (s *Source) List() []runtime.Object {
	var n int
	lists := make([][]interface{}, len(s.informers))
	for i, inf := range s.informers {
		lists[i] = inf.GetIndexer().List()
		n += len(lists[i])
	}
	out := make([]runtime.Object, 0, n)
	for _, l := range lists {
		for _, o := range l {
			if obj, ok := o.(runtime.Object); ok {
				out = append(out, obj)
			}
		}
	}
	return out
}

// TakeDirty reports whether a change was dropped since the last call, and
// clears the mark: the caller then owes the type a snapshot.
func (s *Source) TakeDirty() bool { return s.dirty.Swap(false) }

// Dropped is how many changes the queue refused since start.
func (s *Source) Dropped() int64 { return s.dropped.Load() }

func (s *Source) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			// The start-up snapshot reports the initial list.
			if isInInitialList {
				return
			}
			if o, ok := s.object(obj); ok {
				s.offer(Change{Verb: Added, Object: o})
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok := s.object(newObj)
			if !ok {
				return
			}
			old, ok := s.object(oldObj)
			if !ok {
				return
			}
			// Equal versions are resync or relist noise, not a change.
			if resourceVersion(o) == resourceVersion(old) {
				return
			}
			s.offer(Change{Verb: Updated, Object: o, OldObject: old})
		},
		DeleteFunc: func(obj interface{}) {
			c := Change{Verb: Deleted}
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				c.FinalStateUnknown = true
				obj = tomb.Obj
			}
			if o, ok := s.object(obj); ok {
				c.Object = o
				s.offer(c)
			}
		},
	}
}

func (s *Source) object(obj interface{}) (runtime.Object, bool) {
	o, ok := obj.(runtime.Object)
	if !ok {
		s.logger.Error(nil, "Informer delivered a value that is not an object; skipped", "type", fmt.Sprintf("%T", obj))
		return nil, false
	}
	if _, err := meta.Accessor(o); err != nil {
		s.logger.Error(err, "Informer delivered an object without metadata; skipped")
		return nil, false
	}
	return o, true
}

func (s *Source) offer(c Change) {
	c.Resource = s.Resource
	c.ObservedAt = s.now()
	s.observer.Observed(s.Resource, c.Verb)
	if !s.queue.TryPut(c) {
		s.dropped.Add(1)
		s.dirty.Store(true)
		s.observer.Dropped(s.Resource)
	}
}

func resourceVersion(o runtime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// MarkDirty records that the type owes consumers a snapshot, e.g. because
// a published change was rejected.
func (s *Source) MarkDirty() { s.dirty.Store(true) }

// Dirty reports whether a change was dropped since the last TakeDirty.
func (s *Source) Dirty() bool { return s.dirty.Load() }

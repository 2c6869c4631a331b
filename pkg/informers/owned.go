package informers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Owns tells whether this bridge publishes the object namespace/name
// (namespace empty for a cluster-scoped object): a shard's part of a type.
type Owns func(namespace, name string) bool

// ownedListWatch is a ListerWatcher that drops, from lists and from watch
// events, every object owns refuses, so that the reflector, and so the
// informer's cache, never holds one. Bookmarks and errors pass.
type ownedListWatch struct {
	lw   cache.ListerWatcherWithContext
	owns Owns
	// selector, if set, is sent as the list's and watch's shard selector;
	// filtered is told whether the apiserver applied it to a list.
	selector *ShardSelector
	filtered func(bool)
	// foreign, if set, is told how many objects owns refused.
	foreign func(n int)
	// probe makes the first watch that lists (client-go's watch-list,
	// whose events do not say whether a selector was applied) ask once
	// with a list of one object.
	probe *sync.Once
}

var (
	_ cache.ListerWatcherWithContext = ownedListWatch{}
	_ cache.ListerWatcher            = ownedListWatch{}
)

// List and Watch are for client-go's constructors, which take the
// ListerWatcher of old; the reflector calls the WithContext methods.
func (o ownedListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

func (o ownedListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

func (o ownedListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	sel, _ := o.selector.current()
	opts.ShardSelector = sel
	list, err := o.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if sel != "" && o.filtered != nil {
		o.filtered(shardSelectorOf(list) == sel)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("shard filter: %w", err)
	}
	kept := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if o.admits(item) {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(items) {
		return list, nil
	}
	o.refused(len(items) - len(kept))
	if err := meta.SetList(list, kept); err != nil {
		return nil, fmt.Errorf("shard filter: %w", err)
	}
	return list, nil
}

func (o ownedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sel, generation := o.selector.current()
	opts.ShardSelector = sel
	if sel != "" && o.filtered != nil && o.probe != nil && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		o.probe.Do(func() {
			// The list's shardInfo says whether the apiserver applies
			// the selector; one object is enough to ask.
			list, err := o.lw.ListWithContext(ctx, metav1.ListOptions{ShardSelector: sel, Limit: 1})
			if err == nil {
				o.filtered(shardSelectorOf(list) == sel)
			}
		})
	}
	w, err := o.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	filtered := watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if !o.admits(ev.Object) {
				o.refused(1)
				return ev, false
			}
			return ev, true
		default:
			return ev, true
		}
	})
	if o.selector == nil {
		return filtered, nil
	}
	return o.selector.track(generation, w, filtered), nil
}

// refused counts n objects of other shards dropped.
func (o ownedListWatch) refused(n int) {
	if o.foreign != nil {
		o.foreign(n)
	}
}

// admits an object owns accepts, and anything without metadata: that is
// the reflector's to report, not the filter's to hide.
func (o ownedListWatch) admits(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err != nil || o.owns(m.GetNamespace(), m.GetName())
}

// shardSelectorOf is the shard selector a list response says the apiserver
// applied (metadata.shardInfo.selector), "" when it says none.
func shardSelectorOf(list runtime.Object) string {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		sel, _, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		return sel
	case interface{ GetListMeta() metav1.ListInterface }:
		if lm, ok := l.GetListMeta().(*metav1.ListMeta); ok && lm.ShardInfo != nil {
			return lm.ShardInfo.Selector
		}
	}
	return ""
}

// ownedInformer builds informers as newInformer does, on list and watch
// filtered by owns (and, with selector, by the apiserver): typed
// (protobuf, from Clients.Config) for the types client-go's scheme knows,
// dynamic for the others.
func ownedInformer(owns Owns, selector *ShardSelector, filtered func(bool), foreign func(int)) func(Clients, *Resource, string, func(*metav1.ListOptions), cache.TransformFunc, cacheForm) (cache.SharedIndexInformer, func(<-chan struct{}), bool, error) {
	return func(clients Clients, res *Resource, ns string, tweak func(*metav1.ListOptions), transform cache.TransformFunc, form cacheForm) (cache.SharedIndexInformer, func(<-chan struct{}), bool, error) {
		lw, example, typed, err := listWatch(clients, res, ns, tweak)
		if err != nil {
			return nil, nil, false, err
		}
		var p *packer
		if !typed && form.decodes(clients) {
			if lw, p, err = compactListWatch(clients.Config, res, ns, tweak, *form.trims); err != nil {
				return nil, nil, false, err
			}
			example = &Compact{}
		}
		inf := cache.NewSharedIndexInformer(ownedListWatch{lw: lw, owns: owns, selector: selector, filtered: filtered, foreign: foreign, probe: &sync.Once{}}, example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if p != nil {
			// Decoded straight into Compact: no transform.
			p.packing = packingOf(inf)
		} else if err := setTransform(inf, res, transform, form, typed); err != nil {
			return nil, nil, false, err
		}
		return inf, func(stop <-chan struct{}) { go inf.Run(stop) }, typed, nil
	}
}

// listWatch is the list and watch of res in namespace ns (all when empty),
// with tweak applied to their options, and an empty object of its type.
func listWatch(clients Clients, res *Resource, ns string, tweak func(*metav1.ListOptions)) (cache.ListerWatcherWithContext, runtime.Object, bool, error) {
	gv := res.GVR.GroupVersion()
	if clients.Config != nil && clients.Typed != nil {
		if example, err := scheme.Scheme.New(gv.WithKind(res.Kind)); err == nil {
			cfg := rest.CopyConfig(clients.Config)
			cfg.GroupVersion = &gv
			cfg.APIPath = "/apis"
			if gv.Group == "" {
				cfg.APIPath = "/api"
			}
			cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
			rc, err := rest.RESTClientFor(cfg)
			if err != nil {
				return nil, nil, false, fmt.Errorf("%s: REST client: %w", res, err)
			}
			return cache.NewFilteredListWatchFromClient(rc, res.GVR.Resource, ns, tweak), example, true, nil
		}
	}
	if clients.Dynamic == nil {
		return nil, nil, false, fmt.Errorf("%s: no typed client configuration and no dynamic client", res)
	}
	ri := clients.Dynamic.Resource(res.GVR).Namespace(ns)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return ri.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return ri.Watch(ctx, opts)
		},
	}, &unstructured.Unstructured{}, false, nil
}

// newInformer builds res's informer in namespace ns (all when empty) from
// client-go's informer factories: typed when the typed clients know the
// type, else dynamic; its cache holds Compact objects when form says so,
// a dynamic type's decoded straight from JSON when form allows that.
func newInformer(clients Clients, res *Resource, ns string, tweak func(*metav1.ListOptions), transform cache.TransformFunc, form cacheForm) (cache.SharedIndexInformer, func(<-chan struct{}), bool, error) {
	if clients.Typed != nil {
		f := kinformers.NewSharedInformerFactoryWithOptions(clients.Typed, 0, kinformers.WithNamespace(ns), kinformers.WithTweakListOptions(tweak))
		if generic, err := f.ForResource(res.GVR); err == nil {
			inf := generic.Informer()
			if err := setTransform(inf, res, transform, form, true); err != nil {
				return nil, nil, false, err
			}
			return inf, f.Start, true, nil
		}
	}
	if form.decodes(clients) {
		lw, p, err := compactListWatch(clients.Config, res, ns, tweak, *form.trims)
		if err != nil {
			return nil, nil, false, err
		}
		inf := cache.NewSharedIndexInformerWithOptions(lw, &Compact{}, cache.SharedIndexInformerOptions{
			Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, ObjectDescription: res.GVR.String(),
		})
		p.packing = packingOf(inf)
		return inf, func(stop <-chan struct{}) { go inf.Run(stop) }, false, nil
	}
	if clients.Dynamic == nil {
		return nil, nil, false, fmt.Errorf("%s: no typed informer and no dynamic client", res)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(clients.Dynamic, 0, ns, tweak)
	inf := f.ForResource(res.GVR).Informer()
	if err := setTransform(inf, res, transform, form, false); err != nil {
		return nil, nil, false, err
	}
	return inf, f.Start, false, nil
}

// setTransform sets inf's transform: transform, then the compact form when
// form caches the type's objects so.
func setTransform(inf cache.SharedIndexInformer, res *Resource, transform cache.TransformFunc, form cacheForm, typed bool) error {
	if form.compacts(typed) {
		transform = compacting(transform, res, packerOf(inf))
	}
	if transform == nil {
		return nil
	}
	if err := inf.SetTransform(transform); err != nil {
		return fmt.Errorf("%s: set transform: %w", res, err)
	}
	return nil
}

// cacheForm is how a type's objects are cached: a dynamic type's Compact,
// or Unstructured (WithUnstructuredCache); a typed type's typed, or
// Compact (WithCompactTyped).
type cacheForm struct {
	compact bool
	// typed: a typed type's objects are cached Compact too.
	typed bool
	// trims, if set, are what the Source's transform does
	// (WithCompactDecoding): Compact objects may then be decoded straight
	// from the apiserver's JSON, trimmed as they say, without the
	// Unstructured tree.
	trims *TransformOptions
}

// compacts reports whether a type's objects, typed or not, are cached
// Compact.
func (f cacheForm) compacts(typed bool) bool {
	return f.compact && (!typed || f.typed)
}

// decodes reports whether objects are decoded straight into Compact: it
// takes the REST configuration (fake clients have none).
func (f cacheForm) decodes(clients Clients) bool {
	return f.compact && f.trims != nil && clients.Config != nil
}

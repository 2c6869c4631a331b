package consume

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// NewSharedIndexInformer returns a client-go shared informer of the
// objects f selects, filled from the stream by a ListWatch: controller
// code written for an informer on the API server runs on it unchanged
// (listers over GetIndexer, AddEventHandler, WaitForCacheSync, indexers).
// example is as for NewListWatch (&corev1.ConfigMap{} for ConfigMaps);
// resync and indexers are cache.NewSharedIndexInformer's. What the
// handlers see, compared with an informer on the API server, is in the
// package documentation (Informers).
//
//	inf, err := client.NewSharedIndexInformer(consume.Filter{Resource: "configmaps"}, &corev1.ConfigMap{}, 0,
//		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
//	lister := listersv1.NewConfigMapLister(inf.GetIndexer())
func (c *Client) NewSharedIndexInformer(f Filter, example runtime.Object, resync time.Duration, indexers cache.Indexers, opts ...ListWatchOption) (cache.SharedIndexInformer, error) {
	lw, err := c.NewListWatch(f, example, opts...)
	if err != nil {
		return nil, err
	}
	return cache.NewSharedIndexInformer(lw, example, resync, indexers), nil
}

// NewFilteredSharedIndexInformer is NewSharedIndexInformer with tweak
// applied to the options of every list and watch, as client-go's
// NewFiltered…Informer functions do: set a label selector, or a field
// selector on metadata.name or metadata.namespace.
func (c *Client) NewFilteredSharedIndexInformer(f Filter, example runtime.Object, resync time.Duration, indexers cache.Indexers, tweak func(*metav1.ListOptions), opts ...ListWatchOption) (cache.SharedIndexInformer, error) {
	if tweak == nil {
		return c.NewSharedIndexInformer(f, example, resync, indexers, opts...)
	}
	lw, err := c.NewListWatch(f, example, opts...)
	if err != nil {
		return nil, err
	}
	return cache.NewSharedIndexInformer(&tweakedListWatch{ListWatch: lw, tweak: tweak}, example, resync, indexers), nil
}

// tweakedListWatch applies a tweak to the options of a ListWatch.
type tweakedListWatch struct {
	*ListWatch
	tweak func(*metav1.ListOptions)
}

func (t *tweakedListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	t.tweak(&o)
	return t.ListWatch.ListWithContext(ctx, o)
}

func (t *tweakedListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	t.tweak(&o)
	return t.ListWatch.WatchWithContext(ctx, o)
}

func (t *tweakedListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), o)
}

func (t *tweakedListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), o)
}

// LabelIndexFunc indexes objects by the value of one label; objects
// without it are not indexed.
//
//	indexers := cache.Indexers{"app": consume.LabelIndexFunc("app")}
//	objs, err := informer.GetIndexer().ByIndex("app", "checkout")
func LabelIndexFunc(label string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("consume: index by label %s: %w", label, err)
		}
		if v, ok := m.GetLabels()[label]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

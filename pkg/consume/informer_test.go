package consume

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A shared informer over the stream: lister, indexers, handlers,
// WaitForCacheSync.
func TestSharedIndexInformer(t *testing.T) {
	f, c := newStreamFab(t)
	history(f)
	inf, err := c.NewSharedIndexInformer(Filter{Resource: "configmaps"}, &corev1.ConfigMap{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "tier": LabelIndexFunc("tier")})
	if err != nil {
		t.Fatal(err)
	}
	calls := runInformer(t, inf)
	var initial []string
	for range historyState {
		initial = append(initial, <-calls)
	}
	slices.Sort(initial)
	if want := []string{"add ns/a@14", "add ns/b@11", "add ns/d@13", "add ns/e@22", "add ns/f@21"}; !slices.Equal(initial, want) {
		t.Errorf("initial calls %q", initial)
	}

	web := cm("ns", "g", "u8", "40")
	web.Labels = map[string]string{"tier": "web"}
	f.added(web)
	f.updated(cm("ns", "a", "u1", "41"), cm("ns", "a", "u1", "14"))
	f.deleted(cm("ns", "b", "u2", "42"))
	for _, want := range []string{"add ns/g@40", "update ns/a@14 -> ns/a@41", "delete ns/b@42"} {
		if got := <-calls; got != want {
			t.Errorf("call %q, want %q", got, want)
		}
	}
	lister := listersv1.NewConfigMapLister(inf.GetIndexer())
	if cm, err := lister.ConfigMaps("ns").Get("a"); err != nil || cm.ResourceVersion != "41" {
		t.Errorf("lister: %v %v", cm, err)
	}
	if cms, _ := lister.List(labels.Everything()); len(cms) != 5 {
		t.Errorf("lister lists %d", len(cms))
	}
	if objs, err := inf.GetIndexer().ByIndex("tier", "web"); err != nil || len(objs) != 1 || describe(objs[0]) != "ns/g@40" {
		t.Errorf("by tier web: %v %v", objs, err)
	}
}

// A custom resource the scheme does not know: its informer holds
// Unstructured objects, lists into an UnstructuredList, and takes a label
// selector.
func TestFilteredInformerOfUnstructured(t *testing.T) {
	f, c := newStreamFab(t)
	f.term("a")
	widget := func(name, uid, rv, color string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": "ns", "name": name, "uid": uid, "resourceVersion": rv, "labels": map[string]any{"color": color}}}}
	}
	f.changeOf(widgets, informers.Added, widget("a", "u1", "10", "blue"), nil)
	f.changeOf(widgets, informers.Added, widget("b", "u2", "11", "red"), nil)
	ex := &unstructured.Unstructured{}
	ex.SetAPIVersion("example.com/v1")
	ex.SetKind("Widget")

	lw, err := c.NewListWatch(Filter{Resource: "widgets.example.com"}, ex)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ul, ok := l.(*unstructured.UnstructuredList); !ok || len(ul.Items) != 2 || ul.GetKind() != "WidgetList" {
		t.Errorf("listed %#v", l)
	}

	inf, err := c.NewFilteredSharedIndexInformer(Filter{Resource: "widgets.example.com"}, ex, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = "color=blue" })
	if err != nil {
		t.Fatal(err)
	}
	calls := runInformer(t, inf)
	f.changeOf(widgets, informers.Updated, widget("b", "u2", "12", "blue"), widget("b", "u2", "11", "red"))
	f.changeOf(widgets, informers.Updated, widget("a", "u1", "13", "red"), widget("a", "u1", "10", "blue"))
	for _, want := range []string{"add ns/a@10", "add ns/b@12", "delete ns/a@13"} {
		if got := <-calls; got != want {
			t.Errorf("call %q, want %q", got, want)
		}
	}
	for _, o := range inf.GetIndexer().List() {
		if _, ok := o.(*unstructured.Unstructured); !ok {
			t.Errorf("the cache holds a %T", o)
		}
	}
}

// runInformer runs inf until the test ends, its handler's calls described
// on the channel returned, and waits until it has synced.
func runInformer(t *testing.T, inf cache.SharedIndexInformer) <-chan string {
	t.Helper()
	calls := make(chan string, 100)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { calls <- "add " + describe(obj) },
		UpdateFunc: func(old, obj any) { calls <- "update " + describe(old) + " -> " + describe(obj) },
		DeleteFunc: func(obj any) { calls <- "delete " + describe(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	return calls
}

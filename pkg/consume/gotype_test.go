package consume_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

// TestCustomResourceInItsGoType runs a consumer whose scheme has the
// Widget's Go type, as a controller's has its custom resources' types,
// on the bridge of a real apiserver: the State's indexer, its handlers'
// old and new objects, and an informer over a ListWatch all hold
// *fixtures.Widget, at the content the apiserver has, through the
// start-up snapshot and live changes.
func TestCustomResourceInItsGoType(t *testing.T) {
	h := newHarness(t)
	h.ensureWidgetCRD()
	ctx := context.Background()
	widgets := h.dyn.Resource(widgetGVR).Namespace(h.ns)
	for i := range 12 {
		if _, err := widgets.Create(ctx, h.widgetWithData(fmt.Sprintf("w-%02d", i), int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.runBridge("widgets.example.com")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fixtures.AddWidgetTypes(scheme)
	client := h.client(consume.WithScheme(scheme))
	filter := consume.Filter{Resource: "widgets.example.com", Namespace: h.ns}
	st, err := client.NewState([]consume.Filter{filter})
	if err != nil {
		t.Fatal(err)
	}
	updates := &sizeUpdates{}
	if err := st.AddEventHandler("widgets.example.com", updates); err != nil {
		t.Fatal(err)
	}
	inf, err := client.NewSharedIndexInformer(filter, &fixtures.Widget{}, 0, cache.Indexers{})
	if err != nil {
		t.Fatal(err)
	}
	_, runCtx := ktesting.NewTestContext(t)
	runCtx, cancel := context.WithCancel(runCtx)
	done := make(chan error, 1)
	go func() { done <- st.Run(runCtx) }()
	go inf.RunWithContext(runCtx)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(runCtx, time.Minute)
	defer syncCancel()
	if err := st.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync within a minute")
	}
	h.checkWidgetSizes("after the start-up snapshot", st.Indexer("widgets.example.com"), inf.GetStore())

	patch := []byte(`{"spec":{"size":103}}`)
	if _, err := widgets.Patch(ctx, "w-03", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := widgets.Delete(ctx, "w-04", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Create(ctx, h.widgetWithData("w-20", 20), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitCaughtUp(st)
	h.checkWidgetSizes("after live changes", st.Indexer("widgets.example.com"), inf.GetStore())
	if got, want := updates.seen(), []string{"w-03: 3 -> 103"}; !slices.Equal(got, want) {
		t.Errorf("the handler's updates: %q, want %q", got, want)
	}
}

// widgetWithData is h.widget with data shaped like a ConfigMap's.
func (h *harness) widgetWithData(name string, size int64) *unstructured.Unstructured {
	u := h.widget(name, size)
	u.Object["data"] = map[string]any{"size": fmt.Sprint(size)}
	return u
}

// checkWidgetSizes waits until every store holds the apiserver's Widgets,
// each a *fixtures.Widget with the apiserver's spec and data.
func (h *harness) checkWidgetSizes(what string, stores ...cache.Store) {
	h.t.Helper()
	list, err := h.dyn.Resource(widgetGVR).Namespace(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var want []string
	for _, u := range list.Items {
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		want = append(want, fmt.Sprintf("%s@%s size=%d data=%v", u.GetName(), u.GetResourceVersion(), size, data))
	}
	slices.Sort(want)
	for i, store := range stores {
		var got []string
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = got[:0]
			for _, o := range store.List() {
				w, ok := o.(*fixtures.Widget)
				if !ok {
					return false, fmt.Errorf("a %T in the store, not a *fixtures.Widget", o)
				}
				got = append(got, fmt.Sprintf("%s@%s size=%d data=%v", w.Name, w.ResourceVersion, w.Spec.Size, w.Data))
			}
			slices.Sort(got)
			return slices.Equal(got, want), nil
		})
		if err != nil {
			h.t.Errorf("%s: store %d: %v\n got %q\nwant %q", what, i, err, got, want)
		}
	}
}

// sizeUpdates records the updates a handler is given, as "name: old
// size -> new size".
type sizeUpdates struct {
	mu      sync.Mutex
	updates []string
}

func (s *sizeUpdates) OnAdd(any, bool) {}
func (s *sizeUpdates) OnDelete(any)    {}
func (s *sizeUpdates) OnUpdate(old, obj any) {
	o, _ := old.(*fixtures.Widget)
	n, _ := obj.(*fixtures.Widget)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o == nil || n == nil {
		s.updates = append(s.updates, fmt.Sprintf("a %T -> a %T", old, obj))
		return
	}
	s.updates = append(s.updates, fmt.Sprintf("%s: %d -> %d", n.Name, o.Spec.Size, n.Spec.Size))
}

func (s *sizeUpdates) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updates)
}

package consume_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/bridgetest"
	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

// The real thing: kube-apiserver and etcd from internal/testenv, the
// bridge's Serve in process, JetStream in the environment's nats-server.

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{})
}

const cluster = "it"

var (
	harnessSeq = atomic.Int64{}
	widgetGVR  = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// harness is one test's namespace, subject prefix and stream.
type harness struct {
	t      *testing.T
	env    *testenv.Env
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	ns     string
	prefix string
	stream string
	js     jetstream.JetStream
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.Get(t)
	n := harnessSeq.Add(1)
	h := &harness{t: t, env: env, prefix: fmt.Sprintf("consume%d", n), stream: fmt.Sprintf("CONSUME_%d", n)}
	kube := env.Clients(t)
	h.cs, h.dyn = kube.Kube, kube.Dynamic
	ctx := context.Background()
	ns, err := h.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "consume-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.ns = ns.Name
	h.js = bridgetest.JetStream(t, env, h.stream)
	return h
}

func (h *harness) client(opts ...consume.Option) *consume.Client {
	h.t.Helper()
	opts = append([]consume.Option{consume.WithStream(h.stream), consume.WithSubjectPrefix(h.prefix), consume.WithCluster(cluster)}, opts...)
	c, err := consume.New(h.js, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// runBridge runs Serve until the returned stop is called (which requires
// it to end without an error), and waits until its start-up snapshots are
// stored.
func (h *harness) runBridge(resources string) (stop func()) {
	h.t.Helper()
	return h.launchBridge(resources, nil).Stop
}

// launchBridge starts Serve with more variables and waits until its
// start-up snapshots are stored. It is stopped when the test ends.
func (h *harness) launchBridge(resources string, vars map[string]string) *bridgetest.Run {
	h.t.Helper()
	env := map[string]string{
		"BRIDGE_RESOURCES": resources, "BRIDGE_NAMESPACES": h.ns, "BRIDGE_CLUSTER_NAME": cluster,
		"BRIDGE_SUBJECT_PREFIX": h.prefix, "BRIDGE_STREAM_NAME": h.stream,
	}
	maps.Copy(env, vars)
	return bridgetest.Start(h.t, h.env, env)
}

// ensureWidgetCRD creates widgets.example.com unless it exists and waits
// until discovery serves it.
func (h *harness) ensureWidgetCRD() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := h.dyn.Resource(crdGVR).Create(ctx, fixtures.WidgetCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatalf("create CRD: %v", err)
	}
	if err := fixtures.WaitForWidgets(ctx, h.cs.Discovery()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) widget(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": h.ns}, "spec": map[string]any{"size": size}}}
}

// listed is what the apiserver lists in the namespace, as sorted
// "name@resourceVersion".
func (h *harness) listed() (configMaps, widgets []string) {
	h.t.Helper()
	ctx := context.Background()
	cms, err := h.cs.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, cm := range cms.Items {
		configMaps = append(configMaps, cm.Name+"@"+cm.ResourceVersion)
	}
	ws, err := h.dyn.Resource(widgetGVR).Namespace(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, w := range ws.Items {
		widgets = append(widgets, w.GetName()+"@"+w.GetResourceVersion())
	}
	sort.Strings(configMaps)
	sort.Strings(widgets)
	return configMaps, widgets
}

// held is an indexer's content as sorted "name@resourceVersion".
func held(idx cache.Indexer) []string {
	var out []string
	for _, o := range idx.List() {
		m, err := meta.Accessor(o)
		if err != nil {
			panic(err)
		}
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	sort.Strings(out)
	return out
}

// diff describes how got differs from want, "" if it does not.
func diff(got, want []string) string {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	trim := func(s []string) string {
		if len(s) > 10 {
			s = append(s[:10:10], "…")
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("%d missing (%s), %d not listed by the apiserver (%s)", len(missing), trim(missing), len(extra), trim(extra))
}

// mirror is a handler that keeps its own copy of the objects, as a
// service that reacts to changes would.
type mirror struct {
	mu   sync.Mutex
	objs map[string]string // key → rv
}

func newMirror() *mirror { return &mirror{objs: map[string]string{}} }

func (m *mirror) set(obj any) {
	o, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[o.GetName()] = o.GetResourceVersion()
}

func (m *mirror) OnAdd(obj any, _ bool) { m.set(obj) }
func (m *mirror) OnUpdate(_, obj any)   { m.set(obj) }
func (m *mirror) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, o.GetName())
}

func (m *mirror) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k, rv := range m.objs {
		out = append(out, k+"@"+rv)
	}
	sort.Strings(out)
	return out
}

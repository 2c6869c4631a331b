package consume

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// cachedObjects is how many objects BenchmarkCachedObjects caches.
const cachedObjects = 10000

// BenchmarkCachedObjects measures what one object costs a consumer's
// cache: the live heap an Applier (what a State and a ListWatch keep
// objects in) holds for 10,000 objects of 2 KB of data in four keys, with
// a label, read from messages the bridge's encoder wrote. The floor is
// the same objects as ConfigMaps (client-go's Go type); against it, Widgets
// (a custom resource) decoded into their Go type (WithScheme) and into
// Unstructured (no Go type in the scheme). Each iteration measures the
// three in a rotating order; it reports each one's bytes per object and
// the two ratios to the floor.
//
//	go test -run '^$' -bench CachedObjects -benchtime 3x -count 3 ./pkg/consume
func BenchmarkCachedObjects(b *testing.B) {
	typed := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(typed); err != nil {
		b.Fatal(err)
	}
	fixtures.AddWidgetTypes(typed)
	forms := []struct {
		name     string
		goType   string
		resource *informers.Resource
		client   *Client
		msgs     []*nats.Msg
	}{
		{name: "configmaps", goType: "*v1.ConfigMap", resource: cmResource, client: testClient(b, fakeJS{})},
		{name: "widgets-gotype", goType: "*fixtures.Widget", resource: widgets, client: testClient(b, fakeJS{}, WithScheme(typed))},
		{name: "widgets-unstructured", goType: "*unstructured.Unstructured", resource: widgets, client: testClient(b, fakeJS{})},
	}
	for i := range forms {
		forms[i].msgs = cachedObjectMessages(b, forms[i].resource)
	}
	perObject := make([]float64, len(forms))
	for i := range b.N {
		for k := range forms {
			f := forms[(i+k)%len(forms)]
			perObject[(i+k)%len(forms)] += cacheAll(b, f.client, f.resource, f.goType, f.msgs)
		}
	}
	for k, f := range forms {
		b.ReportMetric(perObject[k]/float64(b.N), f.name+"-B/object")
	}
	b.ReportMetric(perObject[1]/perObject[0], "gotype/configmaps")
	b.ReportMetric(perObject[2]/perObject[0], "unstructured/configmaps")
}

// cacheAll applies msgs to a new Applier of r and returns the live heap it
// holds per object once they are applied, each object a goType.
func cacheAll(b *testing.B, c *Client, r *informers.Resource, goType string, msgs []*nats.Msg) float64 {
	b.Helper()
	resource := r.GVR.GroupResource().String()
	a, err := c.NewApplier([]Filter{{Resource: resource}})
	if err != nil {
		b.Fatal(err)
	}
	before := fixtures.LiveHeap()
	for i, m := range msgs {
		if err := a.ApplyMsg(uint64(i+1), m); err != nil {
			b.Fatal(err)
		}
	}
	after := fixtures.LiveHeap()
	if n := len(a.Indexer(resource).ListKeys()); n != len(msgs) {
		b.Fatalf("%s: the cache holds %d objects of %d", resource, n, len(msgs))
	}
	for _, o := range a.Indexer(resource).List() {
		if got := fmt.Sprintf("%T", o); got != goType {
			b.Fatalf("%s: the cache holds a %s, not a %s", resource, got, goType)
		}
	}
	if s := a.Stats(); s.Breaches() != 0 {
		b.Fatalf("%s: violations: %v", resource, s.Violations)
	}
	runtime.KeepAlive(a)
	return fixtures.PerObject(before, after, len(msgs))
}

// cachedObjectMessages is cachedObjects Added events of r, each object
// with the same random data whatever its type, as the bridge encodes them
// (a Widget as its informer caches it: unstructured content).
func cachedObjectMessages(b *testing.B, r *informers.Resource) []*nats.Msg {
	b.Helper()
	enc := &encode.Encoder{Subjects: testSubjects}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]*nats.Msg, cachedObjects)
	for i := range msgs {
		rng := rand.New(rand.NewPCG(uint64(i), 0x6b75626562726964))
		data := make(map[string]string, 4)
		for k := range 4 {
			data["key-"+strconv.Itoa(k)] = fixtures.RandomData(rng, 512)
		}
		meta := metav1.ObjectMeta{Namespace: "bench-memory", Name: fmt.Sprintf("obj-%06d", i), UID: fixtures.MemoryUID(i),
			ResourceVersion: strconv.Itoa(123456789 + i), Labels: map[string]string{"app": "bench"},
			CreationTimestamp: metav1.NewTime(at)}
		var obj k8sruntime.Object
		if r == cmResource {
			obj = &corev1.ConfigMap{ObjectMeta: meta, Data: data}
		} else {
			w := &fixtures.Widget{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}, ObjectMeta: meta, Data: data}
			content, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(w)
			if err != nil {
				b.Fatal(err)
			}
			obj = &unstructured.Unstructured{Object: content}
		}
		e, err := enc.EncodeWithin(informers.Change{Verb: informers.Added, Resource: r, Object: obj, ObservedAt: at}, 0)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = e.Msg
	}
	return msgs
}

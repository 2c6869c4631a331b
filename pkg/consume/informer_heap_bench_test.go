package consume

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// BenchmarkInformerHeap compares, on one stream of 10,000 ConfigMaps, the
// live heap of an informer over a ListWatch once synced (its cache, and
// what the ListWatch keeps to check the stream and to resume) with that
// of the floor: an informer whose ListerWatcher serves the same objects,
// decoded from the same messages by encoding/json, and nothing else.
// Each iteration measures both, in alternating order; it reports each
// one's bytes per object and their ratio.
//
//	go test -run '^$' -bench InformerHeap -benchtime 4x -count 3 ./pkg/consume
func BenchmarkInformerHeap(b *testing.B) {
	js := benchStream(b)
	client := testClient(b, js)
	overStream := func() float64 {
		before := fixtures.LiveHeap()
		lw, err := client.NewListWatch(Filter{Resource: "configmaps"}, &corev1.ConfigMap{})
		if err != nil {
			b.Fatal(err)
		}
		return heapOfInformer(b, lw, before)
	}
	floor := func() float64 {
		before := fixtures.LiveHeap()
		return heapOfInformer(b, &servedList{list: decodedConfigMaps(b, js)}, before)
	}
	var stream, bare float64
	for i := range b.N {
		if i%2 == 0 {
			stream += overStream()
			bare += floor()
		} else {
			bare += floor()
			stream += overStream()
		}
	}
	b.ReportMetric(stream/float64(b.N), "listwatch-B/object")
	b.ReportMetric(bare/float64(b.N), "floor-B/object")
	b.ReportMetric(stream/bare, "listwatch/floor")
}

// heapOfInformer runs an informer of ConfigMaps over lw until synced and
// returns the live heap per object from before to then.
func heapOfInformer(b *testing.B, lw cache.ListerWatcher, before int64) float64 {
	b.Helper()
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		b.Fatal("not synced within a minute")
	}
	if n := len(inf.GetStore().ListKeys()); n != benchObjects {
		b.Fatalf("synced with %d objects", n)
	}
	after := fixtures.LiveHeap()
	runtime.KeepAlive(lw)
	runtime.KeepAlive(inf)
	// Stopped before the next measurement starts, so that it does not
	// count this cache as freed.
	cancel()
	for !inf.IsStopped() {
		time.Sleep(10 * time.Millisecond)
	}
	// The ListWatch's session stops its stream consumer when the
	// reflector stops its watch.
	time.Sleep(200 * time.Millisecond)
	return fixtures.PerObject(before, after, benchObjects)
}

// decodedConfigMaps reads the stream's ConfigMaps and decodes each with
// encoding/json, as client-go's JSON decoding of a list gives them.
func decodedConfigMaps(b *testing.B, js jetstream.JetStream) *corev1.ConfigMapList {
	b.Helper()
	ctx := context.Background()
	filter := testSubjects.Prefix + "." + testSubjects.Cluster + ".core.v1.configmaps.*.*"
	c, err := js.OrderedConsumer(ctx, "KB", jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		b.Fatal(err)
	}
	list := &corev1.ConfigMapList{Items: make([]corev1.ConfigMap, 0, benchObjects)}
	for len(list.Items) < benchObjects {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Data()) == 0 {
			continue // a snapshot marker
		}
		var d struct{ Object corev1.ConfigMap }
		if err := json.Unmarshal(m.Data(), &d); err != nil {
			b.Fatal(err)
		}
		list.Items = append(list.Items, d.Object)
	}
	list.ResourceVersion = "1"
	return list
}

// servedList is a ListerWatcher that lists list and then watches forever
// without an event.
type servedList struct{ list *corev1.ConfigMapList }

func (s *servedList) List(metav1.ListOptions) (k8sruntime.Object, error) { return s.list, nil }
func (s *servedList) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}
func (*servedList) IsWatchListSemanticsUnSupported() bool { return true }

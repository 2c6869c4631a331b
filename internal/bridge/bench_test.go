package bridge

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var benchPods = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// BenchmarkPipelineUpdatedPods measures updated Pod events per second from
// the handler's queue to JetStream acknowledgement, through an in-process
// nats-server with a file-backed stream: order guard, parallel encoding of
// new and old objects, async publishing with the default window.
func BenchmarkPipelineUpdatedPods(b *testing.B) {
	for _, storage := range []string{"file", "memory"} {
		b.Run(storage, func(b *testing.B) { benchPipeline(b, storage) })
	}
}

func benchPipeline(b *testing.B, storage string) {
	n := startNATS(b)
	nc, js := connect(b, n.url())
	cfg := testConfig(b, map[string]string{"BRIDGE_STREAM_STORAGE": storage, "BRIDGE_QUEUE_SIZE": "20000"})
	subjects := encode.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	ctx := context.Background()
	if _, err := ensureStream(ctx, js, cfg, subjects); err != nil {
		b.Fatal(err)
	}
	// 2000 distinct Pods, each updated repeatedly: consecutive events are
	// for different subjects, as with many Pods changing at once.
	const pods = 2000
	olds := make([]*corev1.Pod, pods)
	for i := range olds {
		olds[i] = fixtures.Pod(i, 1)
	}
	sh := newShared(cfg.QueueSize, metrics.New())
	q, cnt := sh.queue, &sh.counters
	sh.maxPayload = func() int { return int(nc.MaxPayload()) }
	soft, stop := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	defer cancelHard()
	var wg sync.WaitGroup
	enc := &encode.Encoder{Subjects: subjects}
	if _, _, err := startPublishing(soft, hard, &wg, cfg, js, enc, sh); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rv := 10
	for i := 0; i < b.N; i++ {
		k := i % pods
		rv++
		next := fixtures.Pod(k, rv)
		if err := q.Put(ctx, informers.Change{Verb: informers.Updated, Resource: benchPods, Object: next, OldObject: olds[k], ObservedAt: start}); err != nil {
			b.Fatal(err)
		}
		olds[k] = next
	}
	for cnt.acked.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	stop()
	wg.Wait()
	if cnt.superseded.Load() != 0 || cnt.encodeErrs.Load() != 0 {
		b.Fatalf("superseded %d, encode errors %d", cnt.superseded.Load(), cnt.encodeErrs.Load())
	}
}

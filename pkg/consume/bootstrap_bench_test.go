package consume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

const benchObjects = 10000

// benchStream starts an in-process server with a stream holding a term
// marker and a start-up snapshot of benchObjects ConfigMaps (~1 KB of data
// each), made by the bridge's encoder. With KUBEBRIDGE_BENCH_NATS_URL set
// it makes the stream on that server instead, so that the process's heap
// is the consumer's alone.
func benchStream(b *testing.B) jetstream.JetStream {
	b.Helper()
	var js jetstream.JetStream
	if url := os.Getenv("KUBEBRIDGE_BENCH_NATS_URL"); url != "" {
		_, js = natstest.JetStream(b, url)
		if err := js.DeleteStream(context.Background(), "KB"); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			b.Fatal(err)
		}
		createTestStream(b, js)
	} else {
		_, js, _ = startJetStream(b)
	}
	ctx := context.Background()
	enc := &encode.Encoder{Subjects: testSubjects}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	marker, err := enc.TermMarker(contract.TermData{Holder: "bench"}, at)
	if err != nil {
		b.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx, marker)
	if err != nil {
		b.Fatal(err)
	}
	enc.Term = ack.Sequence
	publish := func(c informers.Change) {
		e, err := enc.EncodeWithin(c, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishMsgAsync(e.Msg); err != nil {
			b.Fatal(err)
		}
	}
	value := string(make([]byte, 1000))
	publish(informers.Change{Verb: informers.SnapshotBegin, Resource: cmResource, SnapshotID: "s1", ObservedAt: at})
	for i := range benchObjects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%10), Name: fmt.Sprintf("cm-%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: fmt.Sprint(100 + i)}, Data: map[string]string{"v": value}}
		publish(informers.Change{Verb: informers.SnapshotItem, Resource: cmResource, Object: cm, SnapshotID: "s1", ObservedAt: at})
	}
	publish(informers.Change{Verb: informers.SnapshotEnd, Resource: cmResource, SnapshotID: "s1", SnapshotCount: benchObjects, ObservedAt: at})
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishing the stream took over a minute")
	}
	return js
}

// BenchmarkBootstrap compares, on one stream of 10,000 ConfigMaps, what a
// State costs to bootstrap (its default, a full replay, reads here the
// same messages as the last per subject) with the two baselines measured
// in the same run: reading the same messages with a plain pull consumer
// and nothing else (raw), and the same plus encoding/json decoding each
// object into a corev1.ConfigMap (json).
//
//	go test -run '^$' -bench Bootstrap -benchtime 5x -count 3 ./pkg/consume
func BenchmarkBootstrap(b *testing.B) {
	js := benchStream(b)
	ctx := context.Background()
	filter := testSubjects.Prefix + "." + testSubjects.Cluster + ".core.v1.configmaps.*.*"
	read := func(b *testing.B, each func(jetstream.Msg)) {
		c, err := js.CreateConsumer(ctx, "KB", jetstream.ConsumerConfig{FilterSubjects: []string{filter},
			DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = js.DeleteConsumer(ctx, "KB", c.CachedInfo().Name) }()
		for left := int(c.CachedInfo().NumPending); left > 0; {
			batch, err := c.Fetch(min(left, 2048), jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			for m := range batch.Messages() {
				each(m)
				left--
			}
			if err := batch.Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		for range b.N {
			n := 0
			read(b, func(jetstream.Msg) { n++ })
			if n != benchObjects+2 { // and the two snapshot markers
				b.Fatalf("read %d", n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchObjects), "ns/object")
	})
	b.Run("json", func(b *testing.B) {
		for range b.N {
			n := 0
			read(b, func(m jetstream.Msg) {
				n++
				if len(m.Data()) == 0 {
					return // a snapshot marker
				}
				var d struct{ Object corev1.ConfigMap }
				if err := json.Unmarshal(m.Data(), &d); err != nil || d.Object.Name == "" {
					b.Fatalf("decode: %v", err)
				}
			})
			if n != benchObjects+2 { // and the two snapshot markers
				b.Fatalf("read %d", n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchObjects), "ns/object")
	})
	b.Run("state", func(b *testing.B) {
		client := testClient(b, js)
		for range b.N {
			st, err := client.NewState([]Filter{{Resource: "configmaps"}})
			if err != nil {
				b.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- st.Run(rctx) }()
			if err := st.WaitForSync(rctx); err != nil {
				b.Fatal(err)
			}
			if n := len(st.Indexer("configmaps").ListKeys()); n != benchObjects {
				b.Fatalf("state holds %d objects", n)
			}
			cancel()
			<-done
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchObjects), "ns/object")
	})
}

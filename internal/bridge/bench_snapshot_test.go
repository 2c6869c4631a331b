package bridge

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// BenchmarkSnapshot is a start-up snapshot of b.N ConfigMaps with 2 KB of
// data each, cached compact as the bridge caches a built-in type without
// rules, from the request to the end marker's acknowledgement: the intake
// reading the cache, the pipeline, the fenced publisher, on a fresh file
// stream whose term has begun. BenchmarkRawSnapshotItems is its floor, the
// same items encoded beforehand and published from one goroutine with
// the same headers and fence condition (versus's publish-raw-items, in
// process). Run both with -benchtime 20000x, alternated:
//
//	KUBEBRIDGE_BENCH_NATS_URL=nats://127.0.0.1:14222 /tmp/bridge.test -test.run '^$' \
//	  -test.bench 'Snapshot$|RawSnapshotItems' -test.benchtime 20000x
func BenchmarkSnapshot(b *testing.B) {
	nc, _, cfg, enc, fence := snapshotStream(b)
	cache := snapshotCache(b, b.N)
	m := metrics.New()
	js, acks := bridgeJetStream(b, cfg, nc)
	deps := publishingDeps{acks: acks, metrics: m, fence: fence, encoder: enc, maxPayload: bridgeLimits(b, nc, js, cfg)}
	pb, stop := runPublishing(b, cfg, js, deps)
	defer stop()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	ended := pb.markers.expect("bench")
	pb.intake.RequestSnapshot(configMaps, cache, informers.Scope{}, "bench")
	var r markerResult
	select {
	case r = <-ended:
	case <-time.After(10 * time.Minute):
		b.Fatal("the end marker was not stored within 10m")
	}
	elapsed, cpu := time.Since(start), processCPU(b)-cpuStart
	b.StopTimer()
	if r.err != nil {
		b.Fatal(r.err)
	}
	if r.stored != b.N {
		b.Fatalf("the end marker counts %d stored items of %d", r.stored, b.N)
	}
	reportItems(b, elapsed, cpu)
}

// BenchmarkRawSnapshotItems is BenchmarkSnapshot's floor: its items,
// encoded beforehand by the same encoder with the term's header and each
// expecting its subject to be empty, published with jetstream's async
// publish from one goroutine to the same kind of stream.
func BenchmarkRawSnapshotItems(b *testing.B) { rawSnapshotItems(b, false) }

// BenchmarkEncodedSnapshotItems is BenchmarkRawSnapshotItems with each
// item read from the cache and encoded as it is sent, in the same
// goroutine: a publisher's floor, which tells what the bridge's intake,
// order guard, pipeline and settling add to reading, encoding and
// publishing the items in one loop.
func BenchmarkEncodedSnapshotItems(b *testing.B) { rawSnapshotItems(b, true) }

func rawSnapshotItems(b *testing.B, encodeAsSent bool) {
	ctx := context.Background()
	nc, _, cfg, enc, _ := snapshotStream(b)
	cache := snapshotCache(b, b.N)
	keys := cache.Keys()
	// Encoded as sent, each message's buffers go back to the encoder once
	// it is stored, as the bridge's do.
	var mu sync.Mutex
	unacked := map[*nats.Msg]encode.Encoded{}
	item := func(key string) *nats.Msg {
		obj, _ := cache.Get(key)
		e, err := enc.EncodeWithin(informers.Change{Verb: informers.SnapshotItem, Resource: configMaps, Object: obj, SnapshotID: "bench"}, 0)
		if err != nil {
			b.Fatal(err)
		}
		e.Msg.Header.Set(sink.HeaderExpectedLastSubjectSequence, "0")
		if encodeAsSent {
			mu.Lock()
			unacked[e.Msg] = e
			mu.Unlock()
		}
		return e.Msg
	}
	msgs := make([]*nats.Msg, 0, b.N)
	if !encodeAsSent {
		for _, key := range keys {
			msgs = append(msgs, item(key))
		}
	}
	var opts []jetstream.JetStreamOpt
	if encodeAsSent {
		opts = append(opts, jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			mu.Lock()
			e := unacked[m]
			delete(unacked, m)
			mu.Unlock()
			e.Release()
		}))
	}
	// The floor's JetStream has no handler: nothing of its own per ack.
	ajs, err := jetstream.New(nc, opts...)
	if err != nil {
		b.Fatal(err)
	}
	stream, err := ajs.Stream(ctx, cfg.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	before := info.State.LastSeq
	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	futures := make([]jetstream.PubAckFuture, len(keys))
	for i, key := range keys {
		if encodeAsSent {
			msgs = append(msgs, item(key))
		}
		if futures[i], err = ajs.PublishMsgAsync(msgs[i], jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-time.After(10 * time.Minute):
		b.Fatal("publishes unacknowledged after 10m")
	}
	elapsed, cpu := time.Since(start), processCPU(b)-cpuStart
	b.StopTimer()
	if info, err = stream.Info(ctx); err != nil {
		b.Fatal(err)
	}
	for i, f := range futures {
		select {
		case err := <-f.Err():
			b.Fatalf("%s: %v", msgs[i].Subject, err)
		default:
		}
	}
	if stored := info.State.LastSeq - before; stored != uint64(b.N) {
		b.Fatalf("the stream stored %d of %d items", stored, b.N)
	}
	reportItems(b, elapsed, cpu)
}

// snapshotStream is the benchmarks' stream, created afresh as the bridge
// creates it (file storage), with a term begun on it, and the encoder of
// that term.
func snapshotStream(b *testing.B) (*nats.Conn, jetstream.JetStream, *config.Config, *encode.Encoder, *sink.Fence) {
	nc, js := connect(b, benchNATS(b))
	// A name of its own per run: a file stream created again under the
	// name of one just deleted showed the deleted one's state (nats-server
	// 2.15.3: the first item found its subject at sequence 2, and after a
	// purge was taken for a duplicate).
	name := "KUBEBRIDGE_SNAPSHOT_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg := testConfig(b, map[string]string{"BRIDGE_STREAM_STORAGE": "file", "BRIDGE_ENCODE_WORKERS": "0", "BRIDGE_STREAM_NAME": name})
	b.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			b.Error(err)
		}
	})
	_, enc, fence := benchStream(b, js, cfg, true)
	return nc, js, cfg, enc, fence
}

// snapshotCache is n ConfigMaps with 2 KB of data each, cached compact.
func snapshotCache(b *testing.B, n int) fixtures.MapCache {
	cache := make(fixtures.MapCache, n)
	data := strings.Repeat("x", 512)
	for i := range n {
		cm := fixtures.MemoryConfigMap(i, 1)
		cm.Data = map[string]string{"a": data, "b": data, "c": data, "d": data + strconv.Itoa(i)}
		c, err := informers.NewTypedCompact(cm, "v1", "ConfigMap")
		if err != nil {
			b.Fatal(err)
		}
		cache[cm.Namespace+"/"+cm.Name] = c
	}
	return cache
}

// reportItems reports the rate and the process's CPU per item.
func reportItems(b *testing.B, elapsed, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/item")
}

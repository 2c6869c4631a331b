package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

var benchPods = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// BenchmarkPipelineUpdatedPods measures updated Pod events per second from
// the handler's queue to JetStream acknowledgement, through an in-process
// nats-server with a file-backed stream: order guard, parallel encoding of
// new and old objects, async publishing with the default window. The
// fenced runs make every publish conditional on its subject's last
// sequence, as the bridge does (the unfenced ones show what that costs).
//
// The Pods are Compact, as the bridge's informer caches a type without
// rules (informers.WithCompactTyped): their JSON was written as they
// entered the cache, which the versus benchmark's CPU per event counts
// and this one does not. memory-fenced-typed feeds typed Pods, as a type
// with rules has them, each encoded at each event.
func BenchmarkPipelineUpdatedPods(b *testing.B) {
	for _, storage := range []string{"file", "memory"} {
		b.Run(storage, func(b *testing.B) { benchPipeline(b, benchNATS(b), storage, 1, false, false) })
		b.Run(storage+"-fenced", func(b *testing.B) { benchPipeline(b, benchNATS(b), storage, 1, true, false) })
	}
	b.Run("memory-fenced-typed", func(b *testing.B) { benchPipeline(b, benchNATS(b), "memory", 1, true, true) })
}

// BenchmarkPipelineReplicas is BenchmarkPipelineUpdatedPods (file storage,
// fenced, as deployed) with the stream on one server (R1) and replicated
// on a cluster of three in-process servers (R3, BRIDGE_STREAM_REPLICAS=3,
// as overlays/with-nats runs it), in the same run: what replication costs.
func BenchmarkPipelineReplicas(b *testing.B) {
	b.Run("R1", func(b *testing.B) { benchPipeline(b, benchNATS(b), "file", 1, true, false) })
	b.Run("R3", func(b *testing.B) { benchPipeline(b, startNATSCluster(b, 3), "file", 3, true, false) })
}

// BenchmarkRawPublish is the baseline for BenchmarkPipelineUpdatedPods:
// the same number of pre-encoded updated-Pod messages (one per Pod, with
// headers) published with jetstream's async publish and a window of the
// same size, to the same kind of in-process server, with nothing else to
// do. The ratio of the two is the pipeline's cost. The fenced runs send
// the fenced pipeline's messages: its term in the header, and each
// publish conditional on the sequence its subject's last publish was
// acknowledged at.
func BenchmarkRawPublish(b *testing.B) {
	for _, storage := range []string{"file", "memory"} {
		b.Run(storage, func(b *testing.B) { benchRawPublish(b, storage, false) })
		b.Run(storage+"-fenced", func(b *testing.B) { benchRawPublish(b, storage, true) })
	}
}

// benchNATS is the server the benchmarks publish to: one started in this
// process, or, when KUBEBRIDGE_BENCH_NATS_URL names one, that server, so
// that the process's CPU profile and allocation counts are the bridge's
// alone. The stream the benchmark uses is deleted there first.
func benchNATS(b *testing.B) string {
	url := os.Getenv("KUBEBRIDGE_BENCH_NATS_URL")
	if url == "" {
		return startNATS(b).url()
	}
	_, js := connect(b, url)
	name := testConfig(b, nil).StreamName
	if err := js.DeleteStream(context.Background(), name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		b.Fatal(err)
	}
	return url
}

func benchRawPublish(b *testing.B, storage string, fenced bool) {
	nc, cfg, stream, toSend := rawMessages(b, storage, fenced)
	info, err := stream.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	before := info.State.LastSeq
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*cfg.PublishWindow))
	if err != nil {
		b.Fatal(err)
	}
	// Each subject's last acknowledgement, for the next publish to it to
	// expect: with at most 2×window publishes pending and more subjects
	// than that, it has come by the time the subject's turn comes again.
	last := map[string]jetstream.PubAckFuture{}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	for _, m := range toSend {
		if fenced {
			expect := uint64(0)
			if f, ok := last[m.Subject]; ok {
				select {
				case ack := <-f.Ok():
					expect = ack.Sequence
				case err := <-f.Err():
					b.Fatalf("%s: %v", m.Subject, err)
				}
			}
			m.Header.Set(sink.HeaderExpectedLastSubjectSequence, strconv.FormatUint(expect, 10))
		}
		f, err := ajs.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		last[m.Subject] = f
	}
	<-ajs.PublishAsyncComplete()
	reportRaw(b, stream, before, start, cpuStart)
}

// rawMessages makes the stream of storage, and b.N pre-encoded updated-Pod
// messages for it: 2,000 distinct Pods, each message with an id of its
// own, as every event the bridge publishes has (a repeated Nats-Msg-Id
// would be acknowledged as a duplicate without being stored, which costs
// the server far less). When fenced, it starts a term first, as the fenced
// pipeline does, and the messages carry it: the stream then holds the
// same term marker below the Pods' messages, which the server's cost of
// keeping each subject's newest N depends on (a memory stream whose first
// message stays put scans the sequences from a subject's removed first
// message to its next one; without the marker the stream's first
// sequence moves past them and the scan is skipped).
func rawMessages(b *testing.B, storage string, fenced bool) (*nats.Conn, *config.Config, jetstream.Stream, []*nats.Msg) {
	nc, js := connect(b, benchNATS(b))
	cfg := testConfig(b, map[string]string{"BRIDGE_STREAM_STORAGE": storage})
	stream, enc, _ := benchStream(b, js, cfg, fenced)
	const pods = 2000
	msgs := make([]*nats.Msg, pods)
	for i := range msgs {
		e, err := enc.EncodeWithin(informers.Change{Verb: informers.Updated, Resource: benchPods, Object: fixtures.Pod(i, 2), OldObject: fixtures.Pod(i, 1)}, 0)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = e.Msg
	}
	toSend := make([]*nats.Msg, b.N)
	for i := range toSend {
		m := msgs[i%pods]
		h := make(nats.Header, len(m.Header))
		for k, v := range m.Header {
			h[k] = v
		}
		h.Set(jetstream.MsgIDHeader, m.Header.Get(jetstream.MsgIDHeader)+"/"+strconv.Itoa(i))
		toSend[i] = &nats.Msg{Subject: m.Subject, Header: h, Data: m.Data}
	}
	return nc, cfg, stream, toSend
}

// benchStream creates cfg's stream as the bridge does and returns it with
// the encoder of its events. When fenced, a term is started on it first,
// as the fenced pipeline does: the stream then holds the term marker below
// every event, the encoder writes the term, and the fence is returned.
func benchStream(b *testing.B, js jetstream.JetStream, cfg *config.Config, fenced bool) (jetstream.Stream, *encode.Encoder, *sink.Fence) {
	ctx := context.Background()
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	if _, err := ensureStream(ctx, js, cfg, subjects, func(error) {}); err != nil {
		b.Fatal(err)
	}
	stream, err := js.Stream(ctx, cfg.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	enc := &encode.Encoder{Subjects: subjects}
	if !fenced {
		return stream, enc, nil
	}
	fence, err := startTerm(ctx, js, stream, enc, contract.TermData{Holder: "bench"}, time.Now(), time.Millisecond, nil)
	if err != nil {
		b.Fatal(err)
	}
	return stream, &encode.Encoder{Subjects: subjects, Term: fence.Term()}, fence
}

// bridgeLimits is the bridge's reading of the largest message it may
// publish on cfg's stream (streamLimits), which the benchmarks' pipelines
// pay for as the bridge's does.
func bridgeLimits(b *testing.B, nc *nats.Conn, js jetstream.JetStream, cfg *config.Config) func() int {
	ctx := context.Background()
	s, err := js.Stream(ctx, cfg.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return newStreamLimits(nc, js, info).maxPayload
}

// bridgeJetStream is nc's JetStream as the bridge makes it for cfg, with
// the Acks its publisher is given.
func bridgeJetStream(b *testing.B, cfg *config.Config, nc *nats.Conn) (jetstream.JetStream, *sink.Acks) {
	acks := sink.NewAcks()
	js, err := newJetStream(cfg, nc, acks)
	if err != nil {
		b.Fatal(err)
	}
	return js, acks
}

// reportRaw reports the rate and the process's CPU per event since start,
// and fails unless the stream stored every message sent after before.
func reportRaw(b *testing.B, stream jetstream.Stream, before uint64, start time.Time, cpuStart time.Duration) {
	elapsed, cpu := time.Since(start), processCPU(b)-cpuStart
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
	info, err := stream.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if stored := info.State.LastSeq - before; stored != uint64(b.N) {
		b.Fatalf("the stream stored %d of %d messages", stored, b.N)
	}
}

func benchPipeline(b *testing.B, url, storage string, replicas int, fenced, typed bool) {
	nc, js := connect(b, url)
	cfg := testConfig(b, map[string]string{"BRIDGE_STREAM_STORAGE": storage, "BRIDGE_ENCODE_WORKERS": "0", "BRIDGE_STREAM_REPLICAS": strconv.Itoa(replicas)})
	ctx := context.Background()
	_, enc, fence := benchStream(b, js, cfg, fenced)
	// 2000 distinct Pods, each updated repeatedly: consecutive events are
	// for different subjects, as with many Pods changing at once.
	const pods = 2000
	olds := make([]runtime.Object, pods)
	for i := range olds {
		olds[i] = fixtures.Pod(i, 1)
		if !typed {
			c, err := informers.NewTypedCompact(olds[i], "v1", "Pod")
			if err != nil {
				b.Fatal(err)
			}
			olds[i] = c
		}
	}
	m := metrics.New()
	pjs, acks := bridgeJetStream(b, cfg, nc)
	deps := publishingDeps{acks: acks, metrics: m, encoder: enc, fence: fence, maxPayload: bridgeLimits(b, nc, pjs, cfg)}
	pb, stop := runPublishing(b, cfg, pjs, deps)
	in := pb.intake
	published := func() int64 { return int64(metrics.Total(m.EventsPublished)) }
	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	rv := 10
	for i := 0; i < b.N; i++ {
		k := i % pods
		rv++
		// A copy of the Pod at a new resourceVersion, sharing the rest
		// (the bridge never writes to an object; a Compact's JSON stays
		// the first version's), so that the loop's own work and
		// allocations stay out of the pipeline's numbers.
		next := atVersion(olds[k], strconv.Itoa(rv))
		// Keep the intake from coalescing: every change is to be encoded
		// and published, as when each object changes once.
		if i%256 == 0 && in.PendingObjects() > pods/2 {
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Microsecond, time.Hour, false, func(context.Context) (bool, error) {
				return in.PendingObjects() <= pods/2, nil
			}); err != nil {
				b.Fatalf("%d objects still pending: %v", in.PendingObjects(), err)
			}
		}
		in.Add(informers.Change{Verb: informers.Updated, Resource: benchPods, Object: next, OldObject: olds[k], ObservedAt: start})
		olds[k] = next
	}
	coalesced := func() int64 { return int64(counterValue(b, m.ChangesCoalesced.WithLabelValues(benchPods.String()))) }
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Hour, true, func(context.Context) (bool, error) {
		return published()+coalesced() >= int64(b.N), nil
	}); err != nil {
		b.Fatalf("%d of %d changes published or coalesced: %v", published()+coalesced(), b.N, err)
	}
	elapsed, cpu := time.Since(start), processCPU(b)-cpuStart
	b.StopTimer()
	b.ReportMetric(float64(published())/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
	b.ReportMetric(float64(coalesced())/float64(b.N), "coalesced/op")
	stop()
	if s, u := metrics.Total(m.EventsSuperseded), metrics.Total(m.Unpublishable); s != 0 || u != 0 {
		b.Fatalf("superseded %v, unpublishable %v", s, u)
	}
}

// atVersion is a shallow copy of obj, a Pod typed or Compact, at
// resourceVersion rv.
func atVersion(obj runtime.Object, rv string) runtime.Object {
	switch o := obj.(type) {
	case *corev1.Pod:
		next := *o
		next.ResourceVersion = rv
		return &next
	case *informers.Compact:
		next := *o
		next.ResourceVersion = rv
		return &next
	}
	panic(fmt.Sprintf("atVersion: a %T", obj))
}

// startNATSCluster starts n in-process nats-servers with JetStream,
// clustered over routes, and returns their client URLs, comma-separated,
// once every one is healthy (a meta leader elected).
func startNATSCluster(b *testing.B, n int) string {
	b.Helper()
	routes := make([]int, n)
	for i := range routes {
		routes[i] = natstest.FreePort(b)
	}
	var urls []string
	var servers []*server.Server
	for i := range n {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: natstest.FreePort(b), JetStream: true, StoreDir: b.TempDir(), NoSigs: true, NoLog: true}
		o.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: routes[i]}
		for _, p := range routes {
			o.Routes = append(o.Routes, server.RoutesFromStr(fmt.Sprintf("nats://127.0.0.1:%d", p))...)
		}
		s, err := server.NewServer(o)
		if err != nil {
			b.Fatal(err)
		}
		s.Start()
		b.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	healthy := 0
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		healthy = 0
		for _, s := range servers {
			if s.Healthz(nil).Status == "ok" {
				healthy++
			}
		}
		return healthy == n, nil
	}); err != nil {
		b.Fatalf("%d of %d nats-servers healthy after a minute", healthy, n)
	}
	return strings.Join(urls, ",")
}

// processCPU is the CPU time, user and system, this process has used: with
// the server in another process (KUBEBRIDGE_BENCH_NATS_URL), what the
// pipeline costs per event, which wall time on a busy machine hides.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

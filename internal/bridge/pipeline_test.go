package bridge

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// recordingStream acknowledges every publish at once, except those on
// rejectFull (refused unless sent truncated) and rejectAlways (always
// refused), which fail as too large; it records what it stored.
type recordingStream struct {
	mu           sync.Mutex
	stored       []*nats.Msg
	rejectFull   string
	rejectAlways string
	// rejectTimes refuses the first n messages on a subject.
	rejectTimes map[string]int
}

type ackedFuture struct {
	ok  chan *jetstream.PubAck
	err chan error
	m   *nats.Msg
}

func (f ackedFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f ackedFuture) Err() <-chan error            { return f.err }
func (f ackedFuture) Msg() *nats.Msg               { return f.m }

func (r *recordingStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if m.Subject == r.rejectAlways || m.Subject == r.rejectFull && m.Header.Get("ce-truncated") != "true" {
		return nil, nats.ErrMaxPayload
	}
	r.mu.Lock()
	if r.rejectTimes[m.Subject] > 0 {
		r.rejectTimes[m.Subject]--
		r.mu.Unlock()
		return nil, nats.ErrMaxPayload
	}
	// A copy, as a server keeps: the pipeline reuses a message once
	// it is acknowledged.
	r.stored = append(r.stored, &nats.Msg{Subject: m.Subject, Header: cloneHeader(m.Header), Data: bytes.Clone(m.Data)})
	r.mu.Unlock()
	f := ackedFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), m: m}
	f.ok <- &jetstream.PubAck{Stream: "S"}
	return f, nil
}

func cloneHeader(h nats.Header) nats.Header {
	out := make(nats.Header, len(h))
	for k, v := range h {
		out[k] = slices.Clone(v)
	}
	return out
}

func (r *recordingStream) messages() []*nats.Msg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*nats.Msg(nil), r.stored...)
}

// noReports is an intake's reports for tests that look at neither.
var noReports = intake.Reports{Coalesced: func(*informers.Resource, int) {}, Unkeyed: func(informers.Change, error) {}}

// runPublishing starts the intake-to-JetStream half on js and stops it when
// the test ends.
// snapshotEnded requests a snapshot of cache's ConfigMaps under id and
// returns its end marker's outcome, failing t if none comes in 10s.
func snapshotEnded(t *testing.T, pb *publishing, cache fixtures.MapCache, id string) markerResult {
	t.Helper()
	ended := pb.markers.expect(id)
	pb.intake.RequestSnapshot(configMaps, cache, informers.Scope{}, id)
	select {
	case r := <-ended:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("end marker of %s not stored", id)
		return markerResult{}
	}
}

func runPublishing(t testing.TB, cfg *config.Config, js sink.AsyncPublisher, d publishingDeps) (*publishing, func()) {
	t.Helper()
	return runPublishingIn(context.Background(), t, cfg, js, d)
}

// runPublishingIn is runPublishing with ctx's logger.
func runPublishingIn(ctx context.Context, t testing.TB, cfg *config.Config, js sink.AsyncPublisher, d publishingDeps) (*publishing, func()) {
	t.Helper()
	soft, stop := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	var wg sync.WaitGroup
	d.js = js
	if d.encoder == nil {
		d.encoder = &encode.Encoder{Subjects: testSubjects}
	}
	if d.metrics == nil {
		d.metrics = metrics.New()
	}
	if d.maxPayload == nil {
		d.maxPayload = func() int { return 0 }
	}
	in := intake.New(time.Now, intake.Reports{
		Coalesced: func(r *informers.Resource, n int) {
			d.metrics.ChangesCoalesced.WithLabelValues(r.String()).Add(float64(n))
		},
		Unkeyed: noReports.Unkeyed,
	})
	pb, err := startPublishing(soft, hard, &wg, cfg, in, d)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	finish := func() {
		once.Do(func() {
			stop()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("publishing did not stop within 30s")
			}
			cancelHard()
			wg.Wait()
		})
	}
	t.Cleanup(finish)
	return pb, finish
}

func testCM(ns, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), ResourceVersion: rv}}
}

// The end marker counts the items that were stored. A message JetStream
// rejects is sent again without its content after the limits are read
// again; one that is refused even so is left out of the count, logged and
// counted once, and triggers no new snapshot.
func TestSnapshotEndCountsStoredItems(t *testing.T) {
	cfg := testConfig(t, nil)
	stream := &recordingStream{rejectFull: testSubjects.Object(configMaps.Type(), "ns", "big"), rejectAlways: testSubjects.Object(configMaps.Type(), "ns", "never")}
	var rereads atomic.Int64
	m := metrics.New()
	pb, stop := runPublishing(t, cfg, stream, publishingDeps{metrics: m, rereadLimits: func() { rereads.Add(1) }})
	cache := fixtures.MapCache{}
	for _, name := range []string{"a", "big", "never", "b"} {
		cache["ns/"+name] = testCM("ns", name, "10")
	}
	for _, id := range []string{"s1", "s2"} {
		r := snapshotEnded(t, pb, cache, id)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.stored != 3 {
			t.Errorf("snapshot %s: stored %d items, want 3 (a, big truncated, b)", id, r.stored)
		}
	}
	stop()
	msgs := stream.messages()
	var ends []*nats.Msg
	truncated := 0
	for _, msg := range msgs {
		switch {
		case msg.Header.Get("ce-type") == contract.TypeSnapshotEnd:
			ends = append(ends, msg)
		case msg.Subject == stream.rejectFull && msg.Header.Get("ce-truncated") == "true":
			truncated++
		case msg.Subject == stream.rejectAlways:
			t.Errorf("stored a message on %s", msg.Subject)
		}
	}
	if len(ends) != 2 {
		t.Fatalf("stored %d end markers, want 2", len(ends))
	}
	for _, e := range ends {
		if got := e.Header.Get("ce-snapshotcount"); got != "3" {
			t.Errorf("snapshotcount %s, want 3", got)
		}
		// The object that exists but cannot be published is listed, so
		// that consumers do not sweep it.
		if got := e.Header.Get("ce-unpublished"); got != "ns.never" {
			t.Errorf("unpublished %q, want %q", got, "ns.never")
		}
	}
	if truncated != 2 {
		t.Errorf("big stored truncated %d times, want once per snapshot", truncated)
	}
	if rereads.Load() == 0 {
		t.Error("limits were not read again after a rejection")
	}
	if got := counterValue(t, m.Unpublishable.WithLabelValues(configMaps.String())); got != 1 {
		t.Errorf("unpublishable counted %v times, want once for one resourceVersion", got)
	}
}

// At V(6) every event published is a line with its verb, object,
// resourceVersion and the changes it stands for; markers are not.
func TestPublishedLoggedAtV6(t *testing.T) {
	var logged syncLines
	logger := funcr.New(func(_, args string) { logged.add(args) }, funcr.Options{Verbosity: 6})
	stream := &recordingStream{}
	pb, stop := runPublishingIn(klog.NewContext(context.Background(), logger), t, testConfig(t, nil), stream, publishingDeps{})
	pb.intake.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: testCM("ns", "a", "7"), OldObject: testCM("ns", "a", "6")})
	snapshotEnded(t, pb, fixtures.MapCache{"ns/b": testCM("ns", "b", "8")}, "s1")
	stop()
	var published []string
	for _, l := range logged.all() {
		if strings.Contains(l, `"Published"`) {
			published = append(published, l)
		}
	}
	want := []string{`"verb"="updated" "object"="ns/a" "resourceVersion"="7" "coalesced"=0`, `"verb"="snapshot.item" "object"="ns/b" "resourceVersion"="8"`}
	if len(published) != len(want) {
		t.Fatalf("published lines %q; want one per object", published)
	}
	for _, w := range want {
		if !slices.ContainsFunc(published, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("published lines %q; want one with %s", published, w)
		}
	}
}

// syncLines collects log lines from several goroutines.
type syncLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *syncLines) add(l string) { s.mu.Lock(); s.lines = append(s.lines, l); s.mu.Unlock() }

func (s *syncLines) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// A snapshot whose end marker is refused is logged, counted and tried again
// with backoff; the type becomes ready once one is stored.
func TestSnapshotterRetriesAFailedSnapshot(t *testing.T) {
	cfg := testConfig(t, nil)
	stream := &recordingStream{rejectTimes: map[string]int{testSubjects.SnapshotEnd(configMaps.Type()): 2}}
	m := metrics.New()
	pb, stop := runPublishing(t, cfg, stream, publishingDeps{metrics: m})
	readies := 0
	status := newTypeStatus(configMaps.String(), m, func() { readies++ })
	s := &snapshotter{res: configMaps, src: fixtures.MapCache{"ns/a": testCM("ns", "a", "1")}, intake: pb.intake, markers: pb.markers,
		ids: newSnapshotIDs(time.Unix(0, 0)), metrics: m, status: status, minBackoff: time.Millisecond, maxBackoff: 4 * time.Millisecond, syncLogEvery: time.Hour}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); s.run(ctx) }()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return status.snapshotted.Load(), nil
	}); err != nil {
		t.Fatal("the type never got its start-up snapshot")
	}
	cancel()
	<-ran
	stop()
	if got := counterValue(t, m.SnapshotFailures.WithLabelValues(configMaps.String())); got != 2 {
		t.Errorf("snapshot failures %v, want 2", got)
	}
	if readies != 1 {
		t.Errorf("ready reported %d times, want 1", readies)
	}
	begins := 0
	for _, msg := range stream.messages() {
		if msg.Header.Get("ce-type") == contract.TypeSnapshotBegin {
			begins++
		}
	}
	if begins != 3 {
		t.Errorf("%d snapshots begun, want 3 (two refused ends, then one stored)", begins)
	}
}

// The run loop asks the order guard: an update the informer's handler
// delivers after a snapshot item of a newer version (the cache runs ahead
// of the handlers) is not published, and counted as superseded; the next
// newer one is.
func TestPipelineDropsAnUpdateOlderThanAnItem(t *testing.T) {
	stream := &recordingStream{}
	m := metrics.New()
	pb, stop := runPublishing(t, testConfig(t, nil), stream, publishingDeps{metrics: m})
	snapshotEnded(t, pb, fixtures.MapCache{"ns/a": testCM("ns", "a", "20")}, "s1")
	pb.intake.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: testCM("ns", "a", "19"), OldObject: testCM("ns", "a", "18")})
	// Handed on alone, not merged into the next.
	for deadline := time.Now().Add(5 * time.Second); pb.intake.PendingObjects() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	pb.intake.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: testCM("ns", "a", "21"), OldObject: testCM("ns", "a", "20")})
	stop()
	subject := testSubjects.Object(configMaps.Type(), "ns", "a")
	var rvs []string
	for _, msg := range stream.messages() {
		if msg.Subject == subject {
			rvs = append(rvs, msg.Header.Get("ce-"+contract.ExtResourceVersion))
		}
	}
	if want := []string{"20", "21"}; !slices.Equal(rvs, want) {
		t.Errorf("published resourceVersions %q of ns/a, want %q: the item, then only the newer update", rvs, want)
	}
	if got := counterValue(t, m.EventsSuperseded.WithLabelValues(configMaps.String())); got != 1 {
		t.Errorf("superseded %v, want 1", got)
	}
}

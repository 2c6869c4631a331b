package sink

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const testTermHeader = "Test-Term"

// everyTermReal reads a message's term from Test-Term (0 without it) and
// takes every term as backed by a marker: the fence tests that are not
// about foreign messages.
type everyTermReal struct{}

func (everyTermReal) Of(h nats.Header) (uint64, bool) {
	if v := h.Get(testTermHeader); v != "" {
		t, err := strconv.ParseUint(v, 10, 64)
		return t, err == nil
	}
	return 0, true
}

func (everyTermReal) Marker(context.Context, uint64) (MarkerState, error) { return MarkerStored, nil }

// fencedWriter is one publisher of one term.
type fencedWriter struct {
	t     *testing.T
	term  uint64
	fence *Fence
	pub   *Publisher
	n     int
}

func newFencedWriter(t *testing.T, route jsRoute, js jetstream.JetStream, stream jetstream.Stream, term uint64) *fencedWriter {
	f := NewFence(term, everyTermReal{}, stream)
	pjs, opts := route(t, js)
	p, err := NewPublisher(pjs, append(opts, WithFence(f), WithBackoff(10*time.Millisecond, 50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	return &fencedWriter{t: t, term: term, fence: f, pub: p}
}

// write publishes one message on subject and returns what Done was given.
func (w *fencedWriter) write(subject string, tombstone bool) error {
	w.t.Helper()
	w.n++
	id := "term" + strconv.FormatUint(w.term, 10) + "/" + strconv.Itoa(w.n)
	var got error
	env := Envelope{
		Msg:       &nats.Msg{Subject: subject, Header: nats.Header{jetstream.MsgIDHeader: {id}, testTermHeader: {strconv.FormatUint(w.term, 10)}}, Data: []byte(id)},
		Tombstone: tombstone,
		Done:      func(err error) { got = err },
	}
	runPublisher(w.t, w.pub, []Envelope{env})
	return got
}

func lastOf(t *testing.T, s jetstream.Stream, subject string) string {
	t.Helper()
	m, err := s.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		t.Fatalf("last of %s: %v", subject, err)
	}
	return string(m.Data)
}

// startFenceStream starts a server with the stream KB on kb.>, as the
// fence tests write it.
func startFenceStream(t *testing.T) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := startJetStream(t)
	ctx := context.Background()
	if _, err := EnsureStream(ctx, js, jetstream.StreamConfig{Name: "KB", Subjects: []string{"kb.>"}, Duplicates: time.Minute}, "kb.>"); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KB")
	if err != nil {
		t.Fatal(err)
	}
	return js, s
}

// A writer whose term is over is refused by JetStream on every subject a
// newer term has written, stops at the first refusal, and publishes nothing
// after it; the newer term overwrites whatever the older one stored on a
// subject it had not written yet.
func TestFenceRefusesAnOlderTerm(t *testing.T) { jsRoutes(t, testFenceRefusesAnOlderTerm) }

func testFenceRefusesAnOlderTerm(t *testing.T, route jsRoute) {
	js, s := startFenceStream(t)
	old := newFencedWriter(t, route, js, s, 1)
	for _, subj := range []string{"kb.a", "kb.b", "kb.c"} {
		if err := old.write(subj, false); err != nil {
			t.Fatalf("term 1 on %s: %v", subj, err)
		}
	}

	// The new term knows nothing of kb.a: its first write is refused, it
	// reads term 1 there, and overwrites.
	cur := newFencedWriter(t, route, js, s, 5)
	if err := cur.write("kb.a", false); err != nil {
		t.Fatalf("term 5 on kb.a: %v", err)
	}
	if got := cur.fence.Overwrote(); got != 1 {
		t.Errorf("term 5 overwrote %d older messages, want 1", got)
	}

	// The old term's late write on kb.a is refused and fences it.
	if err := old.write("kb.a", false); !errors.Is(err, ErrFenced) {
		t.Fatalf("term 1 writing over term 5: %v, want ErrFenced", err)
	}
	select {
	case <-old.fence.Fenced():
	default:
		t.Fatal("term 1 is not fenced after a refusal by term 5")
	}
	// Nothing more leaves it, even on a subject term 5 has not touched.
	if err := old.write("kb.b", false); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced term 1 writing kb.b: %v, want ErrFenced", err)
	}
	if got := lastOf(t, s, "kb.a"); got != "term5/1" {
		t.Errorf("kb.a holds %q, want term 5's message", got)
	}
	if got := lastOf(t, s, "kb.b"); got != "term1/2" {
		t.Errorf("kb.b holds %q, want term 1's message from before term 5", got)
	}

	// A deposed writer that has not met the new term yet can still land a
	// write where the new term has not written (term 3 on kb.c); the new
	// term's next write there overwrites it.
	late := newFencedWriter(t, route, js, s, 3)
	if err := late.write("kb.c", false); err != nil {
		t.Fatalf("term 3 on kb.c: %v", err)
	}
	if err := cur.write("kb.c", false); err != nil {
		t.Fatalf("term 5 on kb.c: %v", err)
	}
	if got := lastOf(t, s, "kb.c"); got != "term5/2" {
		t.Errorf("kb.c holds %q, want term 5's message", got)
	}
	if err := late.write("kb.c", false); !errors.Is(err, ErrFenced) {
		t.Fatalf("term 3 writing over term 5: %v, want ErrFenced", err)
	}

	// A tombstone makes the fence forget its subject; a later write there
	// finds its own term's tombstone and goes on.
	if err := cur.write("kb.a", true); err != nil {
		t.Fatal(err)
	}
	if n := cur.fence.size(); n != 1 {
		t.Errorf("fence remembers %d subjects after the tombstone on kb.a, want 1 (kb.c)", n)
	}
	if err := cur.write("kb.a", false); err != nil {
		t.Fatalf("term 5 writing after its own tombstone: %v", err)
	}
	if got := cur.fence.Adopted(); got != 1 {
		t.Errorf("adopted %d, want 1", got)
	}
	if got := lastOf(t, s, "kb.a"); got != "term5/4" {
		t.Errorf("kb.a holds %q, want term5/4", got)
	}
}

// A fence's guard is asked before every publish: once it refuses, the
// writer is fenced with its error and nothing more is stored, even on a
// subject no newer term has written, which JetStream would take.
func TestFenceGuard(t *testing.T) { jsRoutes(t, testFenceGuard) }

func testFenceGuard(t *testing.T, route jsRoute) {
	js, s := startFenceStream(t)
	w := newFencedWriter(t, route, js, s, 1)
	var stale error
	asked := 0
	w.fence.Guard(func() error { asked++; return stale })
	if err := w.write("kb.a", false); err != nil {
		t.Fatalf("write while the guard lets it: %v", err)
	}
	stale = errors.New("lease stale")
	err := w.write("kb.fresh", false)
	if !errors.Is(err, ErrNotLeading) || !errors.Is(err, stale) {
		t.Fatalf("write after the guard refused: %v, want ErrNotLeading wrapping the guard's error", err)
	}
	if !fencedNow(w.fence) || !errors.Is(w.fence.Err(), ErrNotLeading) {
		t.Errorf("fence after the guard refused: fenced %v, Err %v", fencedNow(w.fence), w.fence.Err())
	}
	if _, err := s.GetLastMsgForSubject(context.Background(), "kb.fresh"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("kb.fresh after the guard refused: %v, want no message", err)
	}
	stale, n := nil, asked
	if err := w.write("kb.b", false); !errors.Is(err, ErrNotLeading) {
		t.Errorf("write after the fence closed: %v, want ErrNotLeading", err)
	}
	if asked != n {
		t.Errorf("the guard was asked again after it fenced the writer")
	}
}

func fencedNow(f *Fence) bool {
	select {
	case <-f.Fenced():
		return true
	default:
		return false
	}
}

// A message stored whose acknowledgement never arrived is not stored twice
// when it is sent again with a stale expected sequence.
func TestFenceRetryOfAStoredMessage(t *testing.T) { jsRoutes(t, testFenceRetryOfAStoredMessage) }

func testFenceRetryOfAStoredMessage(t *testing.T, route jsRoute) {
	js, s := startFenceStream(t)
	ctx := context.Background()
	w := newFencedWriter(t, route, js, s, 7)
	// Stored as if by an earlier attempt whose ack was lost.
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "kb.x", Header: nats.Header{jetstream.MsgIDHeader: {"term7/1"}, testTermHeader: {"7"}}, Data: []byte("term7/1")}); err != nil {
		t.Fatal(err)
	}
	if err := w.write("kb.x", false); err != nil {
		t.Fatalf("retry of a stored message: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", info.State.Msgs)
	}
	if err := w.write("kb.x", false); err != nil {
		t.Fatalf("next write: %v", err)
	}
}

// BenchmarkFenceMemory measures what the fence keeps per subject, and that
// tombstones give it back:
//
//	go test -run '^$' -bench FenceMemory -benchtime 3x ./pkg/sink
func BenchmarkFenceMemory(b *testing.B) {
	const n = 100_000
	subjects := make([]string, n)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("kubebridge.prod.core.v1.configmaps.ns%d.cm-%d", i%100, i)
	}
	var perSubject, afterTombstones float64
	for range b.N {
		before := liveHeap()
		f := NewFence(1, everyTermReal{}, nil)
		for i, s := range subjects {
			f.stored(s, uint64(i+1), false)
		}
		filled := liveHeap()
		for i, s := range subjects {
			f.stored(s, uint64(n+i+1), true)
		}
		emptied := liveHeap()
		if f.size() != 0 {
			b.Fatalf("%d subjects left after their tombstones", f.size())
		}
		perSubject += float64(filled-before) / n
		afterTombstones += float64(emptied-before) / n
		runtime.KeepAlive(f)
	}
	b.ReportMetric(perSubject/float64(b.N), "B/subject")
	b.ReportMetric(afterTombstones/float64(b.N), "B/subject-after-tombstones")
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

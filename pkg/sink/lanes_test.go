package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A subject whose ack does not come (a slow or stuck stream leader, a
// retried message) must not stall the other subjects: their messages are
// published and acknowledged meanwhile, and the stuck subject's later
// messages wait their turn without being attempted.
func TestPublisherNoHeadOfLineBlocking(t *testing.T) { ackRoutes(t, testNoHeadOfLineBlocking) }

func testNoHeadOfLineBlocking(t *testing.T, route func(*laneStream) []Option) {
	release := make(chan struct{})
	fs := holdingStream("A", release)
	p, err := NewPublisher(fs, append(route(fs), WithWindow(64))...)
	if err != nil {
		t.Fatal(err)
	}
	done := newDoneLog()
	in := make(chan Envelope, 64)
	for i := range 3 {
		in <- done.envelope("A", fmt.Sprintf("A%d", i))
	}
	var others []string
	for c := 'B'; c <= 'Z'; c++ {
		id := string(c) + "1"
		others = append(others, id)
		in <- done.envelope(string(c), id)
	}
	close(in)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, in) }()

	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(others, func(id string) bool { return !done.ackedNil(id) }), nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until every subject but A is acknowledged while A's first ack is held")
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return p.InFlight() == 3, nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until InFlight counts A's publish and the two parked behind it: InFlight %d, want 3", p.InFlight())
	}
	if n := fs.attemptsOf("A1") + fs.attemptsOf("A2"); n != 0 {
		t.Errorf("A1 and A2 attempted %d times while A0 was in flight", n)
	}
	close(release)
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	stored, violations, _ := fs.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	if a0, a1, a2 := index(stored, "A0"), index(stored, "A1"), index(stored, "A2"); a0 < 0 || a1 < a0 || a2 < a1 {
		t.Errorf("A stored at %d, %d, %d; want increasing", a0, a1, a2)
	}
	for _, id := range append([]string{"A0", "A1", "A2"}, others...) {
		if problem, err := done.result(id); problem != "" || err != nil {
			t.Errorf("%s: err %v %s", id, err, problem)
		}
	}
	if n := p.InFlight(); n != 0 {
		t.Errorf("InFlight %d after Run returned", n)
	}
}

// When ctx ends, the message in flight and those parked behind it get
// ErrShutdown once each, and the parked ones are never attempted.
func TestPublisherShutdownGivesUpParked(t *testing.T) { ackRoutes(t, testShutdownGivesUpParked) }

func testShutdownGivesUpParked(t *testing.T, route func(*laneStream) []Option) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	fs := holdingStream("A", never)
	p, _ := NewPublisher(fs, append(route(fs), WithWindow(8))...)
	done := newDoneLog()
	in := make(chan Envelope, 8)
	for i := range 3 {
		in <- done.envelope("A", fmt.Sprintf("A%d", i))
	}
	in <- done.envelope("B", "B0")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, in) }()
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return done.ackedNil("B0") && p.InFlight() == 3, nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until B0 acknowledged and A's three messages pending: B0 acknowledged %v, InFlight %d", done.ackedNil("B0"), p.InFlight())
	}
	cancel()
	select {
	case err := <-ran:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run had not returned 20s after its context ended, with A0's acknowledgement never coming")
	}
	for _, id := range []string{"A0", "A1", "A2"} {
		if problem, err := done.result(id); problem != "" || !errors.Is(err, ErrShutdown) {
			t.Errorf("%s: got %v %s, want ErrShutdown once", id, err, problem)
		}
	}
	if n := fs.attemptsOf("A1") + fs.attemptsOf("A2"); n != 0 {
		t.Errorf("parked messages attempted %d times", n)
	}
}

// Property test: many subjects with skewed traffic, random ack delays,
// retryable failures (asynchronous and immediate), rejections and barriers.
// Whatever the timing, each subject's messages are stored in the order
// given, a subject never has two attempts in flight, the window bounds both
// pending messages and attempts, a barrier is attempted only when
// everything before it is stored and nothing after it has been attempted,
// and Done is called exactly once per message.
func TestPublisherOrderUnderRandomAcks(t *testing.T) {
	ackRoutes(t, func(t *testing.T, route func(*laneStream) []Option) {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
				t.Parallel()
				checkRandomRun(t, seed, route)
			})
		}
	})
}

func checkRandomRun(t *testing.T, seed uint64, route func(*laneStream) []Option) {
	rng := rand.New(rand.NewPCG(seed, 42))
	window := []int{1, 3, 16, 64}[seed%4]
	const subjects, messages = 40, 1500

	// Plan the run up front, so that the fake knows the order.
	type planned struct {
		subject, id string
		barrier     bool
		reject      bool
	}
	plan := make([]planned, 0, messages)
	pos := map[string]int{}
	for i := range messages {
		var pl planned
		switch {
		case i%250 == 249:
			pl = planned{subject: "marker", id: fmt.Sprintf("barrier-%d", i), barrier: true}
		default:
			// Squaring skews traffic onto the first subjects, so that
			// messages park behind each other.
			s := int(float64(subjects) * rng.Float64() * rng.Float64())
			pl = planned{subject: fmt.Sprintf("s.%d", s), id: fmt.Sprintf("s%d-m%d", s, i), reject: rng.IntN(100) == 0}
		}
		pos[pl.id] = i
		plan = append(plan, pl)
	}
	fs := newLaneStream(func(m *nats.Msg, attempt int) outcome {
		id := m.Header.Get(jetstream.MsgIDHeader)
		if plan[pos[id]].reject {
			return outcome{immediate: nats.ErrMaxPayload}
		}
		o := outcome{delay: time.Duration(rng.IntN(300)) * time.Microsecond}
		if attempt < 3 {
			switch rng.IntN(20) {
			case 0:
				o.err = jetstream.ErrAsyncPublishTimeout
			case 1:
				o.immediate = nats.ErrConnectionReconnecting
			}
		}
		return o
	})
	fs.check = func(s *laneStream, id string) string {
		if !plan[pos[id]].barrier {
			return ""
		}
		for _, pl := range plan[:pos[id]] {
			if !pl.reject && !s.storedSet[pl.id] {
				return fmt.Sprintf("barrier %s attempted before %s was stored", id, pl.id)
			}
		}
		for _, pl := range plan[pos[id]+1:] {
			if s.attempts[pl.id] > 0 {
				return fmt.Sprintf("%s attempted before barrier %s", pl.id, id)
			}
		}
		return ""
	}
	obs := &countingObserver{}
	p, err := NewPublisher(fs, append(route(fs), WithWindow(window), WithBackoff(50*time.Microsecond, time.Millisecond), WithObserver(obs))...)
	if err != nil {
		t.Fatal(err)
	}
	done := newDoneLog()
	envs := make([]Envelope, 0, len(plan))
	for _, pl := range plan {
		env := done.envelope(pl.subject, pl.id)
		env.Barrier = pl.barrier
		envs = append(envs, env)
	}
	runPublisher(t, p, envs)

	stored, violations, maxTotal := fs.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	if maxTotal > window {
		t.Errorf("%d attempts in flight at once, window %d", maxTotal, window)
	}
	if n := obs.maxInFlight.Load(); n > int64(window) {
		t.Errorf("InFlight reached %d, window %d", n, window)
	}
	storedAt := map[string]int{}
	for i, id := range stored {
		if _, dup := storedAt[id]; dup {
			t.Errorf("%s stored twice", id)
		}
		storedAt[id] = i
	}
	last := map[string]int{}
	for _, pl := range plan {
		problem, err := done.result(pl.id)
		if problem != "" {
			t.Errorf("%s: %s", pl.id, problem)
			continue
		}
		if pl.reject {
			if !errors.Is(err, ErrRejected) {
				t.Errorf("%s: Done got %v, want ErrRejected", pl.id, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Done got %v", pl.id, err)
		}
		at, ok := storedAt[pl.id]
		if !ok {
			t.Errorf("%s never stored", pl.id)
			continue
		}
		if prev, seen := last[pl.subject]; seen && at < prev {
			t.Errorf("%s stored at %d, before the previous message on %s at %d", pl.id, at, pl.subject, prev)
		}
		last[pl.subject] = at
	}
}

// Messages for subjects with nothing in flight are sent in the order they
// were handed on: the dispatcher sends each one's first attempt itself,
// one after the other. Lanes that sent their own would send in whatever
// order the scheduler ran them, each parking on its acknowledgement
// between two sends, which is what let nats.go write every message on its
// own (docs/performance.md, "Publishing from the dispatcher").
func TestPublisherSendsInTheOrderHandedOn(t *testing.T) { ackRoutes(t, testSendsInTheOrderHandedOn) }

func testSendsInTheOrderHandedOn(t *testing.T, route func(*laneStream) []Option) {
	fs := newLaneStream(func(*nats.Msg, int) outcome { return outcome{} })
	var sent []string
	fs.check = func(_ *laneStream, id string) string {
		sent = append(sent, id) // under fs.mu
		return ""
	}
	p, err := NewPublisher(fs, append(route(fs), WithWindow(512))...)
	if err != nil {
		t.Fatal(err)
	}
	var envs []Envelope
	var want []string
	for i := range 300 {
		id := fmt.Sprintf("m%03d", i)
		want = append(want, id)
		envs = append(envs, Envelope{Msg: msg(fmt.Sprintf("s.%d", i), id)})
	}
	runPublisher(t, p, envs)
	if len(sent) != len(want) {
		t.Fatalf("%d attempts for %d messages", len(sent), len(want))
	}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("attempt %d was %s, want %s (handed on in that order)", i, sent[i], want[i])
		}
	}
}

// ackRoutes runs test twice: with a goroutine per message in flight
// waiting on its future, and with Acks handing the publisher each outcome.
func ackRoutes(t *testing.T, test func(t *testing.T, route func(*laneStream) []Option)) {
	t.Run("futures", func(t *testing.T) { test(t, func(*laneStream) []Option { return nil }) })
	t.Run("acks", func(t *testing.T) { test(t, func(s *laneStream) []Option { return []Option{s.routed()} }) })
}

// A barrier built when it is due (a snapshot's end marker, which counts
// the items stored) sees every message before it settled: Done has been
// called for each, not only their acknowledgements received.
func TestBarrierBuildSeesEveryEarlierDone(t *testing.T) {
	ackRoutes(t, testBarrierBuildSeesEveryEarlierDone)
}

func testBarrierBuildSeesEveryEarlierDone(t *testing.T, route func(*laneStream) []Option) {
	rng := rand.New(rand.NewPCG(7, 42))
	fs := newLaneStream(func(*nats.Msg, int) outcome {
		return outcome{delay: time.Duration(rng.IntN(50)) * time.Microsecond}
	})
	p, err := NewPublisher(fs, append(route(fs), WithWindow(16))...)
	if err != nil {
		t.Fatal(err)
	}
	const rounds, messages = 100, 32
	var done atomic.Int64
	for r := range rounds {
		envs := make([]Envelope, 0, messages+1)
		for i := range messages {
			// Done takes a while, as the bridge's does (metrics, the
			// intake): a slot freed before it returns lets the barrier in.
			envs = append(envs, Envelope{Msg: msg(fmt.Sprintf("s.%d", i), fmt.Sprintf("r%d-m%d", r, i)), Done: func(error) {
				time.Sleep(20 * time.Microsecond)
				done.Add(1)
			}})
		}
		want := int64((r + 1) * messages)
		var seen int64
		envs = append(envs, Envelope{Barrier: true, Build: func() (*nats.Msg, error) {
			seen = done.Load()
			return msg("marker", fmt.Sprintf("r%d-end", r)), nil
		}})
		runPublisher(t, p, envs)
		if seen != want {
			t.Fatalf("round %d: the barrier was built with %d messages settled, want %d", r, seen, want)
		}
	}
}

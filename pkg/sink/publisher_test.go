package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fakeStream stores what it acknowledges, in acknowledgement order. Each
// publish is acknowledged after a random delay; fail decides whether an
// attempt fails instead.
type fakeStream struct {
	mu       sync.Mutex
	stored   []string // Nats-Msg-Id in store order
	attempts map[string]int
	fail     func(id string, attempt int) error
	rng      *rand.Rand
	maxDelay time.Duration
}

func newFakeStream(fail func(id string, attempt int) error) *fakeStream {
	return &fakeStream{attempts: map[string]int{}, fail: fail, rng: rand.New(rand.NewPCG(7, 9)), maxDelay: 2 * time.Millisecond}
}

type future struct {
	ok  chan *jetstream.PubAck
	err chan error
	msg *nats.Msg
}

func (f *future) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *future) Err() <-chan error            { return f.err }
func (f *future) Msg() *nats.Msg               { return f.msg }

func (s *fakeStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	id := m.Header.Get(jetstream.MsgIDHeader)
	s.mu.Lock()
	s.attempts[id]++
	attempt := s.attempts[id]
	delay := time.Duration(s.rng.Int64N(int64(s.maxDelay)))
	s.mu.Unlock()
	f := &future{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: m}
	var err error
	if s.fail != nil {
		err = s.fail(id, attempt)
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return nil, err
	}
	go func() {
		time.Sleep(delay) // the acknowledgement's random latency
		if err != nil {
			f.err <- err
			return
		}
		s.mu.Lock()
		s.stored = append(s.stored, id)
		s.mu.Unlock()
		f.ok <- &jetstream.PubAck{Stream: "S"}
	}()
	return f, nil
}

func msg(subject, id string) *nats.Msg {
	return &nats.Msg{Subject: subject, Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
}

func runPublisher(t *testing.T, p *Publisher, envs []Envelope) {
	t.Helper()
	in := make(chan Envelope, len(envs))
	for _, e := range envs {
		in <- e
	}
	close(in)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Run(ctx, in); err != nil {
		t.Fatal(err)
	}
}

func index(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// A failed publish is retried before anything newer on its subject is sent,
// so a subject's messages are stored in the order given.
func TestPublisherKeepsOrderPerSubjectAcrossRetries(t *testing.T) {
	fs := newFakeStream(func(id string, attempt int) error {
		if attempt <= 2 && id[len(id)-1] == '0' { // every tenth version fails twice
			return jetstream.ErrAsyncPublishTimeout
		}
		return nil
	})
	p, err := NewPublisher(fs, WithWindow(64), WithBackoff(time.Millisecond, 4*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var envs []Envelope
	for v := range 50 {
		for obj := range 8 {
			envs = append(envs, Envelope{Msg: msg(fmt.Sprintf("s.obj%d", obj), fmt.Sprintf("obj%d-v%02d", obj, v))})
		}
	}
	runPublisher(t, p, envs)
	if len(fs.stored) != len(envs) {
		t.Fatalf("stored %d of %d", len(fs.stored), len(envs))
	}
	for obj := range 8 {
		last := -1
		for v := range 50 {
			i := index(fs.stored, fmt.Sprintf("obj%d-v%02d", obj, v))
			if i < last {
				t.Fatalf("obj%d v%d stored at %d, before the previous version at %d", obj, v, i, last)
			}
			last = i
		}
	}
}

// A barrier is stored after everything before it and before everything
// after it, even when it and its neighbours need retries.
func TestPublisherBarrier(t *testing.T) {
	fs := newFakeStream(func(id string, attempt int) error {
		if attempt == 1 && (id == "barrier" || id[len(id)-1] == '3') {
			return errors.New("nats: timeout")
		}
		return nil
	})
	p, _ := NewPublisher(fs, WithWindow(16), WithBackoff(time.Millisecond, 2*time.Millisecond))
	var envs []Envelope
	for i := range 40 {
		envs = append(envs, Envelope{Msg: msg(fmt.Sprintf("before.%d", i), fmt.Sprintf("before-%d3", i))})
	}
	envs = append(envs, Envelope{Msg: msg("marker", "barrier"), Barrier: true})
	for i := range 40 {
		envs = append(envs, Envelope{Msg: msg(fmt.Sprintf("after.%d", i), fmt.Sprintf("after-%d3", i))})
	}
	runPublisher(t, p, envs)
	b := index(fs.stored, "barrier")
	for i := range 40 {
		if j := index(fs.stored, fmt.Sprintf("before-%d3", i)); j > b || j < 0 {
			t.Errorf("before-%d3 stored at %d, barrier at %d", i, j, b)
		}
		if j := index(fs.stored, fmt.Sprintf("after-%d3", i)); j < b {
			t.Errorf("after-%d3 stored at %d, barrier at %d", i, j, b)
		}
	}
}

func TestPublisherRejectsWithoutRetry(t *testing.T) {
	fs := newFakeStream(func(id string, _ int) error {
		if id == "big" {
			return nats.ErrMaxPayload
		}
		return nil
	})
	p, _ := NewPublisher(fs)
	var got error
	done := make(chan struct{})
	runPublisher(t, p, []Envelope{{Msg: msg("a", "big"), Done: func(err error) { got = err; close(done) }}, {Msg: msg("b", "ok")}})
	<-done
	if !errors.Is(got, ErrRejected) || !errors.Is(got, nats.ErrMaxPayload) {
		t.Errorf("Done got %v, want ErrRejected wrapping ErrMaxPayload", got)
	}
	if fs.attempts["big"] != 1 {
		t.Errorf("rejected message attempted %d times", fs.attempts["big"])
	}
	if len(fs.stored) != 1 || fs.stored[0] != "ok" {
		t.Errorf("stored %v", fs.stored)
	}
}

func TestPublisherShutdownReportsPending(t *testing.T) {
	fs := newFakeStream(func(string, int) error { return errors.New("nats: server is disconnected") })
	p, _ := NewPublisher(fs, WithBackoff(time.Millisecond, 5*time.Millisecond))
	in := make(chan Envelope, 1)
	got := make(chan error, 1)
	in <- Envelope{Msg: msg("a", "1"), Done: func(err error) { got <- err }}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Run(ctx, in); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run returned %v", err)
	}
	if err := <-got; !errors.Is(err, ErrShutdown) {
		t.Errorf("Done got %v, want ErrShutdown", err)
	}
	if fs.attempts["1"] < 3 {
		t.Errorf("only %d attempts in 100ms with 1-5ms backoff", fs.attempts["1"])
	}
}

func TestOptionsRejectBadValues(t *testing.T) {
	if _, err := NewPublisher(newFakeStream(nil), WithWindow(0)); err == nil {
		t.Error("window 0 accepted")
	}
	if _, err := NewPublisher(newFakeStream(nil), WithBackoff(time.Second, time.Millisecond)); err == nil {
		t.Error("max backoff below min accepted")
	}
}

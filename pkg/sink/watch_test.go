package sink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/netproxy"
)

// The publisher watches one context for all its lanes; a message published
// under another context is still given up when that context ends, while
// the first one lives on.
func TestPublisherGivesUpUnderASecondContext(t *testing.T) {
	ackRoutes(t, testGivesUpUnderASecondContext)
}

func testGivesUpUnderASecondContext(t *testing.T, route func(*laneStream) []Option) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	fs := holdingStream("A", never)
	p, err := NewPublisher(fs, append(route(fs), WithWindow(8))...)
	if err != nil {
		t.Fatal(err)
	}
	done := newDoneLog()
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	if err := p.Publish(first, done.envelope("B", "B0")); err != nil {
		t.Fatal(err)
	}
	second, cancelSecond := context.WithCancel(context.Background())
	for _, id := range []string{"A0", "A1"} {
		if err := p.Publish(second, done.envelope("A", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return done.ackedNil("B0") && fs.attemptsOf("A0") == 1, nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until B0 acknowledged and A0 sent: B0 acknowledged %v, A0 attempted %d times", done.ackedNil("B0"), fs.attemptsOf("A0"))
	}
	cancelSecond()
	drained := make(chan error, 1)
	go func() { drained <- p.Drain(first) }()
	select {
	case err := <-drained:
		if err != nil {
			t.Errorf("Drain under the live context returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A's messages still pending 20s after their context ended, with A0's acknowledgement never coming")
	}
	for _, id := range []string{"A0", "A1"} {
		if problem, err := done.result(id); problem != "" || !errors.Is(err, ErrShutdown) {
			t.Errorf("%s: got %v %s, want ErrShutdown once", id, err, problem)
		}
	}
	if problem, err := done.result("B0"); problem != "" || err != nil {
		t.Errorf("B0: got %v %s, want stored once", err, problem)
	}
}

// taggedCtx is a context that cannot be compared: it holds a slice.
type taggedCtx struct {
	context.Context
	tags []string
}

// A context the publisher cannot compare safely is not shared: two
// contexts that would panic when compared (context.WithoutCancel of a
// context holding a slice) publish side by side.
func TestPublisherTakesContextsItCannotCompare(t *testing.T) {
	ackRoutes(t, testTakesContextsItCannotCompare)
}

func testTakesContextsItCannotCompare(t *testing.T, route func(*laneStream) []Option) {
	fs := newLaneStream(func(*nats.Msg, int) outcome { return outcome{} })
	p, err := NewPublisher(fs, append(route(fs), WithWindow(8))...)
	if err != nil {
		t.Fatal(err)
	}
	done := newDoneLog()
	for i, id := range []string{"A0", "B0"} {
		ctx := context.WithoutCancel(taggedCtx{Context: context.Background(), tags: []string{id}})
		if err := p.Publish(ctx, done.envelope(id[:1], id)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"A0", "B0"} {
		if problem, err := done.result(id); problem != "" || err != nil {
			t.Errorf("%s: got %v %s, want stored once", id, err, problem)
		}
	}
}

// On a real nats-server whose link to the publisher freezes, so that no
// acknowledgement comes back: once the context ends, every message in
// flight or parked is given up, and Drain returns, without waiting for an
// acknowledgement (the JetStream here has no ack timeout).
func TestPublisherGivesUpOnAFrozenLink(t *testing.T) { jsRoutes(t, testGivesUpOnAFrozenLink) }

func testGivesUpOnAFrozenLink(t *testing.T, route jsRoute) {
	s := startServer(t, true)
	proxy, err := netproxy.New(strings.TrimPrefix(s.ClientURL(), "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	nc, err := Connect(context.Background(), "nats://"+proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js := natstest.JetStreamOf(t, nc)
	if _, err := EnsureStream(context.Background(), js, jetstream.StreamConfig{Name: "KB", Subjects: []string{"kb.>"}}, "kb.>"); err != nil {
		t.Fatal(err)
	}
	pjs, opts := route(t, js)
	p, err := NewPublisher(pjs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := newDoneLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := p.Publish(ctx, done.envelope("kb.a", "a0")); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return done.ackedNil("a0"), nil
	}); err != nil {
		t.Fatal("a0 not stored in 20s")
	}
	proxy.Pause()
	t.Cleanup(proxy.Resume)
	frozen := []string{"b0", "b1", "c0"}
	for _, id := range frozen {
		if err := p.Publish(ctx, done.envelope("kb."+id[:1], id)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	drained := make(chan error, 1)
	go func() { drained <- p.Drain(ctx) }()
	select {
	case <-drained:
	case <-time.After(20 * time.Second):
		t.Fatal("Drain had not returned 20s after the context ended, with the link frozen")
	}
	for _, id := range frozen {
		if problem, err := done.result(id); problem != "" || !errors.Is(err, ErrShutdown) {
			t.Errorf("%s: got %v %s, want ErrShutdown once", id, err, problem)
		}
	}
}

package sink

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A publish that fails on a real JetStream (no stream yet: nats.go's
// no-responders retries run out) is retried until it is stored, and the
// messages parked behind it on its subject follow it in order, whichever
// way outcomes reach the publisher. With Acks, the failure arrives on
// nats.go's error callback, and the subject goes on on a goroutine of its
// own.
func TestPublisherRetriesUntilTheStreamExists(t *testing.T) {
	jsRoutes(t, func(t *testing.T, route jsRoute) {
		js := startJetStream(t)
		pjs, opts := route(t, js)
		retried := &retryCounter{}
		p, err := NewPublisher(pjs, append(opts, WithBackoff(10*time.Millisecond, 50*time.Millisecond), WithObserver(retried))...)
		if err != nil {
			t.Fatal(err)
		}
		done := newDoneLog()
		in := make(chan Envelope, 8)
		var ids []string
		for i := range 3 {
			id := fmt.Sprintf("a%d", i)
			ids = append(ids, id)
			in <- done.envelope("kb.a", id)
		}
		in <- done.envelope("kb.b", "b0")
		close(in)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx, in) }()
		for retried.n.Load() == 0 {
			select {
			case err := <-ran:
				t.Fatalf("Run returned %v with no stream to publish to", err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if _, err := EnsureStream(ctx, js, jetstream.StreamConfig{Name: "KB", Subjects: []string{"kb.>"}, Duplicates: time.Minute}, "kb.>"); err != nil {
			t.Fatal(err)
		}
		if err := <-ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, id := range append(ids, "b0") {
			if problem, err := done.result(id); problem != "" || err != nil {
				t.Errorf("%s: err %v %s", id, err, problem)
			}
		}
		s, err := js.Stream(ctx, "KB")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for seq := uint64(1); ; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Subject == "kb.a" {
				got = append(got, m.Header.Get(jetstream.MsgIDHeader))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Errorf("kb.a holds %v, want %v in that order, once each", got, ids)
		}
	})
}

// Acks that no JetStream reports to would leave every publish waiting for
// ever; WithAcks refuses them.
func TestWithAcksRefusesAcksNotInstalled(t *testing.T) {
	_, err := NewPublisher(newLaneStream(func(*nats.Msg, int) outcome { return outcome{} }), WithAcks(NewAcks()))
	if !errors.Is(err, errAcksNotInstalled) {
		t.Errorf("NewPublisher with Acks not installed: %v, want errAcksNotInstalled", err)
	}
}

type retryCounter struct {
	nopObserver
	n atomic.Int64
}

func (r *retryCounter) Retried(*nats.Msg, error) { r.n.Add(1) }

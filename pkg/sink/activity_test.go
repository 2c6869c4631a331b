package sink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestLastActivityStartsZero(t *testing.T) {
	p, _ := NewPublisher(newLaneStream(func(*nats.Msg, int) outcome { return outcome{} }))
	if a := p.LastActivity(); !a.IsZero() {
		t.Errorf("LastActivity %v before any attempt", a)
	}
}

func TestLastActivityOnAck(t *testing.T) {
	p, _ := NewPublisher(newLaneStream(func(*nats.Msg, int) outcome { return outcome{} }))
	before := time.Now()
	runPublisher(t, p, []Envelope{{Msg: msg("a", "1")}})
	if a := p.LastActivity(); a.Before(before) {
		t.Errorf("LastActivity %v, before the run started at %v", a, before)
	}
}

func TestLastActivityOnRejection(t *testing.T) {
	p, _ := NewPublisher(newLaneStream(func(*nats.Msg, int) outcome { return outcome{immediate: nats.ErrMaxPayload} }))
	before := time.Now()
	var got error
	runPublisher(t, p, []Envelope{{Msg: msg("a", "big"), Done: func(err error) { got = err }}})
	if !errors.Is(got, ErrRejected) {
		t.Fatalf("Done got %v, want ErrRejected", got)
	}
	if a := p.LastActivity(); a.Before(before) {
		t.Errorf("LastActivity %v, before the run started at %v", a, before)
	}
}

// While every attempt fails (JetStream down), nothing is acknowledged but
// LastActivity keeps moving: the publisher is trying, not stuck.
func TestLastActivityMovesWhileAttemptsFail(t *testing.T) {
	fs := newLaneStream(func(m *nats.Msg, attempt int) outcome {
		if attempt%2 == 0 {
			return outcome{immediate: nats.ErrNoResponders}
		}
		return outcome{err: errors.New("nats: timeout")}
	})
	p, _ := NewPublisher(fs, WithBackoff(time.Millisecond, 2*time.Millisecond))
	in := make(chan Envelope, 1)
	in <- Envelope{Msg: msg("a", "1")}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, in) }()
	defer func() { cancel(); <-ran }()

	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return !p.LastActivity().IsZero(), nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until a first failed attempt is recorded")
	}
	first := p.LastActivity()
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return p.LastActivity().After(first), nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until LastActivity moves on with the next failed attempts")
	}
	if stored, _, _ := fs.snapshot(); len(stored) != 0 {
		t.Errorf("stored %v although every attempt fails", stored)
	}
}

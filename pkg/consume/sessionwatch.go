package consume

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// A session's watches: reading the stream after where the list or the
// last event delivered stood, and handing the reflector its events.

// consumer is the consumer of a watch: the messages after pos of the type
// and the term markers, as a State reads them once synced.
func (s *session) consumer(c *Client) jetstream.ConsumerConfig {
	subjects := append(s.f.stateSubjects(c.subjects), c.subjects.Terms()...)
	return jetstream.ConsumerConfig{
		FilterSubjects: dedupe(subjects),
		AckPolicy:      jetstream.AckNonePolicy,
		ReplayPolicy:   jetstream.ReplayInstantPolicy,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    s.pos + 1,
	}
}

// watch starts a watch: it delivers the queued events, then applies the
// messages after pos and delivers the events they make.
func (s *session) watch(ctx context.Context, c *Client, timeoutSeconds *int64) (watch.Interface, error) {
	s.stopWatch()
	wctx, cancel := watchContext(ctx, timeoutSeconds)
	r := &reader{js: c.js, stream: c.stream, cfg: s.consumer(c), resume: true}
	if err := r.open(wctx); err != nil {
		cancel()
		return nil, err
	}
	w := &streamWatch{result: make(chan watch.Event), cancel: cancel, done: make(chan struct{})}
	s.active = w
	go s.run(wctx, w, r)
	return w, nil
}

// watchContext is the context of one watch: cancelled by Stop, and done
// after timeoutSeconds when they are set, as the API server ends a watch.
// One context, so that Stop's cancel releases everything it holds.
func watchContext(ctx context.Context, timeoutSeconds *int64) (context.Context, context.CancelFunc) {
	if timeoutSeconds != nil && *timeoutSeconds > 0 {
		return context.WithTimeout(ctx, secondsDuration(*timeoutSeconds))
	}
	return context.WithCancel(ctx)
}

// run is a watch's goroutine. It ends when the watch is stopped or times
// out (the events not delivered wait for the next watch), or when reading
// fails (a watch.Error event, and the session is over).
func (s *session) run(ctx context.Context, w *streamWatch, r *reader) {
	defer close(w.done)
	defer close(w.result)
	defer r.close(ctx)
	for {
		for len(s.queue) > 0 {
			if ctx.Err() != nil {
				// Stopped: a reader that drains the channel after Stop
				// gets nothing more, if it can be helped.
				return
			}
			select {
			case w.result <- s.queue[0]:
				s.lastRV = rvOf(s.queue[0].Object)
				s.queue[0] = watch.Event{}
				s.queue = s.queue[1:]
			case <-ctx.Done():
				return
			}
		}
		if s.err != nil {
			s.fail(ctx, w, s.err)
			return
		}
		m, err := r.next(ctx, 0)
		if err != nil {
			if ctx.Err() == nil {
				s.err = err
				s.fail(ctx, w, err)
			}
			return
		}
		seq := m.meta.Sequence.Stream
		if err := s.a.ApplyMsg(seq, m.natsMsg()); err != nil {
			s.err = err
			s.fail(ctx, w, err)
			return
		}
		s.pos = seq
	}
}

// fail ends a watch with an error event; the reflector lists again.
func (s *session) fail(ctx context.Context, w *streamWatch, err error) {
	status := apierrors.NewInternalError(fmt.Errorf("consume: watch %s: %w", s.f, err)).Status()
	select {
	case w.result <- watch.Event{Type: watch.Error, Object: &status}:
	case <-ctx.Done():
	}
}

// stopWatch stops the active watch and waits until its goroutine is done
// with the session.
func (s *session) stopWatch() {
	if s.active != nil {
		s.active.cancel()
		<-s.active.done
		s.active = nil
	}
}

// streamWatch is the watch.Interface of a session's watch.
type streamWatch struct {
	result chan watch.Event
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *streamWatch) Stop()                          { w.cancel() }
func (w *streamWatch) ResultChan() <-chan watch.Event { return w.result }

package bridge

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"sync"
	"sync/atomic"

	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/metrics"

	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// counters are the pipeline's running totals, logged at shutdown.
type counters struct {
	superseded atomic.Int64
	encodeErrs atomic.Int64
	truncated  atomic.Int64
	acked      atomic.Int64
	unacked    atomic.Int64
}

// pipeline moves changes from the queue to the publisher's input: the
// sequencer applies the order guard, encoders work in parallel, and the
// collector hands envelopes on in the order the sequencer saw them.
type pipeline struct {
	queue    *queue
	guard    *orderGuard
	encoder  *encode.Encoder
	workers  int
	out      chan sink.Envelope
	counters *counters
	markers  *markerWaiter
	metrics  *metrics.Metrics
	// progress is the Unix time in nanoseconds of the last acknowledgement.
	progress *atomic.Int64
	// maxPayload is the current limit on a message's size; it can change
	// when the connection moves to another server.
	maxPayload func() int
	// rejected is told about a type whose event JetStream refused for good,
	// so that it can be snapshotted again.
	rejected func(*informers.Resource)
	items    snapshotItems
}

// snapshotItems counts the items of each open snapshot that were stored,
// so the end marker reports what a consumer will actually see.
type snapshotItems struct {
	mu     sync.Mutex
	stored map[string]*atomic.Int64
}

func (s *snapshotItems) open(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		s.stored = map[string]*atomic.Int64{}
	}
	s.stored[id] = &atomic.Int64{}
}

func (s *snapshotItems) counter(id string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[id]
}

func (s *snapshotItems) close(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.stored[id]
	delete(s.stored, id)
	if n == nil {
		return 0
	}
	return int(n.Load())
}

type job struct {
	c    informers.Change
	slot chan sink.Envelope
}

// run returns once soft is done and the queue is empty, or hard is done,
// closing p.out either way.
func (p *pipeline) run(soft, hard context.Context) {
	logger := klog.FromContext(soft)
	jobs := make(chan job, p.workers*4)
	ordered := make(chan chan sink.Envelope, p.workers*64)
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.slot <- p.envelope(logger, j.c)
			}
		}()
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		defer close(p.out)
		for slot := range ordered {
			var env sink.Envelope
			select {
			case env = <-slot:
			case <-hard.Done():
				return
			}
			if env.Msg == nil && env.Build == nil {
				continue
			}
			select {
			case p.out <- env:
			case <-hard.Done():
				finishEnvelope(env, sink.ErrShutdown)
				return
			}
		}
	}()

	send := func(c informers.Change) bool {
		if !p.guard.admit(&c) {
			p.counters.superseded.Add(1)
			p.metrics.EventsSuperseded.WithLabelValues(c.Resource.String()).Inc()
			return true
		}
		if c.Verb == informers.SnapshotBegin {
			p.items.open(c.SnapshotID)
		}
		slot := make(chan sink.Envelope, 1)
		select {
		case ordered <- slot:
		case <-hard.Done():
			return false
		}
		select {
		case jobs <- job{c: c, slot: slot}:
			return true
		case <-hard.Done():
			return false
		}
	}
	func() {
		for {
			select {
			case c := <-p.queue.ch:
				if !send(c) {
					return
				}
			case <-soft.Done():
				// Hand on what is already queued, then stop.
				for {
					select {
					case c := <-p.queue.ch:
						if !send(c) {
							return
						}
					default:
						return
					}
				}
			}
		}
	}()
	close(jobs)
	close(ordered)
	wg.Wait()
	<-collected
}

func (p *pipeline) envelope(logger klog.Logger, c informers.Change) sink.Envelope {
	resource := c.Resource.String()
	verb, snapshotID := c.Verb, c.SnapshotID
	published := p.metrics.EventsPublished.WithLabelValues(resource, string(verb))
	var stored *atomic.Int64
	if verb == informers.SnapshotItem {
		stored = p.items.counter(snapshotID)
	}
	done := func(err error) {
		if err == nil {
			p.counters.acked.Add(1)
			published.Inc()
			p.progress.Store(time.Now().UnixNano())
			if stored != nil {
				stored.Add(1)
			}
		} else {
			p.counters.unacked.Add(1)
			if errors.Is(err, sink.ErrRejected) {
				p.rejected(c.Resource)
			}
		}
		if verb == informers.SnapshotEnd {
			p.markers.done(snapshotID, err)
		}
	}
	if verb == informers.SnapshotEnd {
		// Encoded when every item before it is settled, with their count.
		return sink.Envelope{Barrier: true, Done: done, Build: func() (*nats.Msg, error) {
			c.SnapshotCount = p.items.close(snapshotID)
			enc, err := p.encoder.EncodeWithin(c, p.maxPayload())
			if err != nil {
				p.counters.encodeErrs.Add(1)
				p.metrics.EncodeErrors.WithLabelValues(resource).Inc()
				return nil, err
			}
			return enc.Msg, nil
		}}
	}
	limit := p.maxPayload()
	enc, err := p.encoder.EncodeWithin(c, limit)
	if err != nil {
		p.counters.encodeErrs.Add(1)
		p.metrics.EncodeErrors.WithLabelValues(resource).Inc()
		logger.Error(err, "Cannot encode change; it is not published", "resource", resource, "verb", verb)
		return sink.Envelope{}
	}
	if enc.Truncated {
		p.counters.truncated.Add(1)
		p.metrics.OversizeObjects.WithLabelValues(resource).Inc()
		logger.Info("Object exceeds the NATS max payload; published without its content (truncated=true)", "subject", enc.Msg.Subject, "id", enc.ID, "limit", limit)
	}
	return sink.Envelope{Msg: enc.Msg, Barrier: verb.IsMarker(), Done: done}
}

func finishEnvelope(env sink.Envelope, err error) {
	if env.Done != nil {
		env.Done(err)
	}
}

// markerWaiter lets a snapshotter wait for its end marker to be stored.
type markerWaiter struct {
	mu      sync.Mutex
	waiting map[string]chan error
}

func newMarkerWaiter() *markerWaiter { return &markerWaiter{waiting: map[string]chan error{}} }

func (w *markerWaiter) expect(snapshotID string) <-chan error {
	ch := make(chan error, 1)
	w.mu.Lock()
	w.waiting[snapshotID] = ch
	w.mu.Unlock()
	return ch
}

func (w *markerWaiter) done(snapshotID string, err error) {
	w.mu.Lock()
	ch := w.waiting[snapshotID]
	delete(w.waiting, snapshotID)
	w.mu.Unlock()
	if ch != nil {
		ch <- err
	}
}

var errEndNotPublished = errors.New("snapshot end marker was not published")

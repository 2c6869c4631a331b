package bridge

import (
	"context"
	"errors"
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
	enqueued   atomic.Int64
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
			if env.Msg == nil {
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
	enc, err := p.encoder.Encode(c)
	if err != nil {
		p.counters.encodeErrs.Add(1)
		p.metrics.EncodeErrors.WithLabelValues(resource).Inc()
		logger.Error(err, "Cannot encode change; it is not published", "resource", c.Resource.String(), "verb", c.Verb)
		if c.Verb == informers.SnapshotEnd {
			p.markers.done(c.SnapshotID, err)
		}
		return sink.Envelope{}
	}
	if enc.Truncated {
		p.counters.truncated.Add(1)
		p.metrics.OversizeObjects.WithLabelValues(resource).Inc()
		logger.Info("Object exceeds the NATS max payload; published without its content (truncated=true)", "subject", enc.Msg.Subject, "id", enc.ID, "limit", p.encoder.MaxPayload)
	}
	env := sink.Envelope{Msg: enc.Msg, Barrier: c.Verb.IsMarker()}
	verb, snapshotID := c.Verb, c.SnapshotID
	published := p.metrics.EventsPublished.WithLabelValues(resource, string(verb))
	env.Done = func(err error) {
		if err == nil {
			p.counters.acked.Add(1)
			published.Inc()
			p.progress.Store(time.Now().UnixNano())
		} else {
			p.counters.unacked.Add(1)
		}
		if verb == informers.SnapshotEnd {
			p.markers.done(snapshotID, err)
		}
	}
	return env
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

package bridge

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// counters are what the pipeline counts that no metric does: publishes
// settled without an acknowledgement (the shutdown says whether any were
// left). Everything else the shutdown reports is read from the metrics.
type counters struct {
	unacked atomic.Int64
}

// publisher is the part of sink.Publisher the collector hands envelopes to.
type publisher interface {
	Publish(ctx context.Context, env sink.Envelope) error
	Drain(ctx context.Context) error
}

// pipeline moves work from the intake to the publisher: its run loop takes
// work from the intake in order and applies the order guard, encoders work
// in parallel, and the collector hands envelopes to the publisher in the
// order the run loop took them, within the byte budget.
type pipeline struct {
	intake  *intake.Intake
	guard   *orderGuard
	encoder *encode.Encoder
	workers int
	// linger is how long the run loop waits, once woken while changes
	// come often (see changesComeOften), before it takes changes in
	// (BRIDGE_PUBLISH_LINGER).
	linger   time.Duration
	budget   *byteBudget
	pub      publisher
	counters *counters
	markers  *markerWaiter
	metrics  *metrics.Metrics
	// maxPayload is the current limit on a message's size; it can change
	// when the connection moves to another server or the stream is edited.
	maxPayload func() int
	// rereadLimits is called after JetStream rejected a message, before it
	// is tried again without its content.
	rereadLimits  func()
	unpublishable *unpublishable
	items         snapshotItems
}

type job struct {
	w    intake.Work
	slot chan encoded
}

// encoded is an envelope from its encoder to the collector, with its
// flight (nil when there is nothing to publish).
type encoded struct {
	env sink.Envelope
	f   *flight
}

// run returns once soft is done, nothing waits in the intake and the
// publisher has settled everything it was handed, or once hard is done. It
// returns the publisher's Drain result: hard's error if hard ended first.
func (p *pipeline) run(soft, hard context.Context) error {
	logger := klog.FromContext(soft)
	jobs := make(chan job, p.workers*2)
	// Few slots: encoded messages waiting here are outside the budget.
	ordered := make(chan chan encoded, p.workers*4)
	// Slots the collector has emptied, for the next changes to reuse: a
	// slot is written once by its encoder and read once by the collector.
	free := make(chan chan encoded, cap(ordered)+1)
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.slot <- p.envelope(logger, j.w)
			}
		}()
	}
	collected := make(chan error, 1)
	go func() {
		p.collect(hard, ordered, free)
		collected <- p.pub.Drain(hard)
	}()

	send := func(w intake.Work) bool {
		if !p.guard.admit(&w.Change) {
			p.metrics.EventsSuperseded.WithLabelValues(w.Change.Resource.String()).Inc()
			p.intake.Done(w)
			return true
		}
		if w.Change.Verb == informers.SnapshotBegin {
			p.guard.expect(w.Change.Resource, w.Listed)
			p.items.open(w.Change.SnapshotID)
		}
		var slot chan encoded
		select {
		case slot = <-free:
		default:
			slot = make(chan encoded, 1)
		}
		// The workers keep up: encoding here saves waking one of them,
		// which at a steady trickle of changes costs more than the
		// encoding. Under load the workers share it.
		inline := len(jobs) == 0
		if inline {
			// Filled before it is handed on: the collector, woken
			// once, finds it ready, rather than waking for the slot and
			// again for its envelope (docs/performance.md, "Where the
			// CPU goes").
			slot <- p.envelope(logger, w)
		}
		select {
		case ordered <- slot:
		case <-hard.Done():
			return false
		}
		if inline {
			return true
		}
		select {
		case jobs <- job{w: w, slot: slot}:
			return true
		case <-hard.Done():
			return false
		}
	}
	func() {
		for {
			w, ok := p.intake.Next(soft, p.linger)
			if !ok {
				break
			}
			if !send(w) {
				return
			}
		}
		// Shutting down: hand on what waits, start no snapshot step.
		if n := p.intake.AbandonHeld(); n > 0 {
			logger.Info("Shutting down before the missed-delete scan of some types finished: their waiting changes are left to the next leader's scan and snapshot", "objects", n)
		}
		for {
			w, ok := p.intake.Drain(hard)
			if !ok || !send(w) {
				return
			}
		}
	}()
	close(jobs)
	close(ordered)
	wg.Wait()
	return <-collected
}

// collect hands envelopes to the publisher in order, each once the budget
// has room for it, until ordered is closed or hard ends. The publisher is
// called here rather than fed through a channel: handing each message to
// another goroutine cost a wake-up per event (docs/performance.md, "The
// collector publishes").
func (p *pipeline) collect(hard context.Context, ordered <-chan chan encoded, free chan<- chan encoded) {
	for slot := range ordered {
		var e encoded
		select {
		case e = <-slot:
		case <-hard.Done():
			return
		}
		select {
		case free <- slot:
		default:
		}
		if e.env.Msg == nil && e.env.Build == nil {
			continue
		}
		n, err := p.budget.acquire(hard, e.f.enc.Size())
		if err != nil {
			finishEnvelope(e.env, sink.ErrShutdown)
			return
		}
		e.f.budget = n
		if p.pub.Publish(hard, e.env) != nil {
			return
		}
	}
}

// envelope encodes w. Every path ends in one call of settle, or, for a
// marker that cannot be encoded, in its snapshot's failure.
func (p *pipeline) envelope(logger klog.Logger, w intake.Work) encoded {
	verb, snapshotID := w.Change.Verb, w.Change.SnapshotID
	f := &flight{w: w}
	if verb == informers.SnapshotItem {
		f.stored = p.items.counter(snapshotID)
	}
	done := func(err error) { p.settle(logger, f, err) }
	if verb == informers.SnapshotEnd {
		// Encoded when every item before it is settled, with their count.
		c := w.Change
		return encoded{f: f, env: sink.Envelope{Barrier: true, Done: done, Build: func() (*nats.Msg, error) {
			f.endCount, c.SnapshotUnpublished = p.items.close(snapshotID)
			c.SnapshotCount = f.endCount
			enc, err := p.encoder.EncodeWithin(c, p.maxPayload())
			if err != nil {
				p.metrics.EncodeErrors.WithLabelValues(c.Resource.String()).Inc()
				return nil, err
			}
			return enc.Msg, nil
		}}}
	}
	c := &f.w.Change
	limit := p.maxPayload()
	var enc encode.Encoded
	var err error
	if w.Truncate {
		enc, err = p.encoder.EncodeTruncated(*c, limit)
	} else {
		enc, err = p.encoder.EncodeWithin(*c, limit)
	}
	if err != nil {
		p.metrics.EncodeErrors.WithLabelValues(c.Resource.String()).Inc()
		if verb.IsMarker() {
			logger.Error(err, "Cannot encode a snapshot marker", "resource", c.Resource.String(), "snapshotID", snapshotID)
			p.markers.done(snapshotID, markerResult{err: err})
			return encoded{}
		}
		done(fmt.Errorf("%w: %w", errUnencodable, err))
		return encoded{}
	}
	if enc.Truncated {
		p.metrics.OversizeObjects.WithLabelValues(c.Resource.String()).Inc()
		logger.Info("Object exceeds the message size limit; published without its content (truncated=true)", "subject", enc.Msg.Subject, "id", enc.ID, "limit", limit)
	}
	f.enc = enc
	return encoded{f: f, env: sink.Envelope{Msg: enc.Msg, Barrier: verb.IsMarker(), Tombstone: verb == informers.Deleted, Done: done}}
}

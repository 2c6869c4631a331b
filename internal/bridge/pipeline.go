package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"k8s.io/klog/v2"

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

// pipeline moves work from the intake to the publisher's input: its run
// loop takes work from the intake in order and applies the order guard,
// encoders work in parallel, and the collector hands envelopes on in the
// order the run loop took them, within the byte budget.
type pipeline struct {
	intake  *intake
	guard   *orderGuard
	encoder *encode.Encoder
	workers int
	// linger is how long the run loop waits, once woken while changes
	// come often (see changesComeOften), before it takes changes in
	// (BRIDGE_PUBLISH_LINGER).
	linger   time.Duration
	budget   *byteBudget
	out      chan sink.Envelope
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
	w    work
	slot chan sink.Envelope
}

// run returns once soft is done and nothing waits in the intake, or hard is
// done, closing p.out either way.
func (p *pipeline) run(soft, hard context.Context) {
	logger := klog.FromContext(soft)
	jobs := make(chan job, p.workers*2)
	// Few slots: encoded messages waiting here are outside the budget.
	ordered := make(chan chan sink.Envelope, p.workers*4)
	// Slots the collector has emptied, for the next changes to reuse: a
	// slot is written once by its encoder and read once by the collector.
	free := make(chan chan sink.Envelope, cap(ordered)+1)
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
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		defer close(p.out)
		p.collect(hard, ordered, free)
	}()

	send := func(w work) bool {
		if !p.guard.admit(&w.c) {
			p.metrics.EventsSuperseded.WithLabelValues(w.c.Resource.String()).Inc()
			p.intake.done(w.ref)
			return true
		}
		if w.c.Verb == informers.SnapshotBegin {
			p.items.open(w.c.SnapshotID)
		}
		var slot chan sink.Envelope
		select {
		case slot = <-free:
		default:
			slot = make(chan sink.Envelope, 1)
		}
		select {
		case ordered <- slot:
		case <-hard.Done():
			return false
		}
		if len(jobs) == 0 {
			// The workers keep up: encoding here saves waking one of
			// them, which at a steady trickle of changes costs more
			// than the encoding. Under load the workers share it.
			slot <- p.envelope(logger, w)
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
			w, ok := p.intake.next(soft, true, p.linger)
			if !ok {
				break
			}
			if !send(w) {
				return
			}
		}
		// Shutting down: hand on what waits, start no snapshot step.
		if n := p.intake.abandonHeld(); n > 0 {
			logger.Info("Shutting down before the missed-delete scan of some types finished: their waiting changes are left to the next leader's scan and snapshot", "objects", n)
		}
		for {
			w, ok := p.intake.next(hard, false, 0)
			if !ok || !send(w) {
				return
			}
		}
	}()
	close(jobs)
	close(ordered)
	wg.Wait()
	<-collected
}

// collect hands envelopes on in order, each once the budget has room for it.
func (p *pipeline) collect(hard context.Context, ordered <-chan chan sink.Envelope, free chan<- chan sink.Envelope) {
	for slot := range ordered {
		var env sink.Envelope
		select {
		case env = <-slot:
		case <-hard.Done():
			return
		}
		select {
		case free <- slot:
		default:
		}
		if env.Msg == nil && env.Build == nil {
			continue
		}
		n, err := p.budget.acquire(hard, msgBytes(env.Msg))
		if err != nil {
			finishEnvelope(env, sink.ErrShutdown)
			return
		}
		settle := env.Done
		env.Done = func(err error) {
			p.budget.release(n)
			settle(err)
		}
		select {
		case p.out <- env:
		case <-hard.Done():
			finishEnvelope(env, sink.ErrShutdown)
			return
		}
	}
}

// envelope encodes w. Every path ends in one call of settle, or, for a
// marker that cannot be encoded, in its snapshot's failure.
func (p *pipeline) envelope(logger klog.Logger, w work) sink.Envelope {
	verb, snapshotID := w.c.Verb, w.c.SnapshotID
	f := &flight{w: w}
	if verb == informers.SnapshotItem {
		f.stored = p.items.counter(snapshotID)
	}
	done := func(err error) { p.settle(logger, f, err) }
	if verb == informers.SnapshotEnd {
		// Encoded when every item before it is settled, with their count.
		c := w.c
		return sink.Envelope{Barrier: true, Done: done, Build: func() (*nats.Msg, error) {
			f.endCount, c.SnapshotUnpublished = p.items.close(snapshotID)
			c.SnapshotCount = f.endCount
			enc, err := p.encoder.EncodeWithin(c, p.maxPayload())
			if err != nil {
				p.metrics.EncodeErrors.WithLabelValues(c.Resource.String()).Inc()
				return nil, err
			}
			return enc.Msg, nil
		}}
	}
	c := &f.w.c
	limit := p.maxPayload()
	var enc encode.Encoded
	var err error
	if w.truncate {
		enc, err = p.encoder.EncodeTruncated(*c, limit)
	} else {
		enc, err = p.encoder.EncodeWithin(*c, limit)
	}
	if err != nil {
		p.metrics.EncodeErrors.WithLabelValues(c.Resource.String()).Inc()
		if verb.IsMarker() {
			logger.Error(err, "Cannot encode a snapshot marker", "resource", c.Resource.String(), "snapshotID", snapshotID)
			p.markers.done(snapshotID, markerResult{err: err})
			return sink.Envelope{}
		}
		done(fmt.Errorf("%w: %w", errUnencodable, err))
		return sink.Envelope{}
	}
	if enc.Truncated {
		p.metrics.OversizeObjects.WithLabelValues(c.Resource.String()).Inc()
		logger.Info("Object exceeds the message size limit; published without its content (truncated=true)", "subject", enc.Msg.Subject, "id", enc.ID, "limit", limit)
	}
	f.enc = enc
	return sink.Envelope{Msg: enc.Msg, Barrier: verb.IsMarker(), Tombstone: verb == informers.Deleted, Done: done}
}

// flight is one work from its encoding to its outcome.
type flight struct {
	w work
	// stored counts the snapshot's items stored (items only).
	stored *atomic.Int64
	// endCount is the end marker's item count, taken when it is built.
	endCount int
	// enc is the message published, whose buffer settle hands back.
	enc encode.Encoded
}

// errUnencodable is the outcome of a change that cannot be encoded in any
// form.
var errUnencodable = errors.New("cannot be encoded")

// settle records the outcome of f's publish: the one place where metrics,
// the snapshot's counts, the end marker's result and the intake's done for
// the object are told. It runs once per flight; a change rejected with its
// content goes back to the intake (requeue) and comes again as a new
// flight, without its content.
func (p *pipeline) settle(logger klog.Logger, f *flight, err error) {
	w, c := f.w, f.w.c
	if err == nil || errors.Is(err, sink.ErrRejected) {
		// Stored, or refused for good: neither nats.go nor the publisher
		// reads the message again. (After a shutdown or a fence a publish
		// may still be pending in nats.go; that buffer is left alone.)
		f.enc.Release()
	}
	object := w.ref != (objectRef{})
	switch {
	case err == nil:
		resource := c.Resource.String()
		p.metrics.EventsPublished.WithLabelValues(resource, string(c.Verb)).Inc()
		if !w.since.IsZero() {
			p.metrics.EventLag.WithLabelValues(resource).Observe(time.Since(w.since).Seconds())
		}
		if f.stored != nil {
			f.stored.Add(1)
		}
		p.unpublishable.forget(c)
	case errors.Is(err, errUnencodable):
		p.giveUp(logger, w, err)
	case errors.Is(err, sink.ErrRejected) && object && !w.truncate:
		// The stream's limits may have changed: read them again and
		// send the object without its content, in its turn.
		p.counters.unacked.Add(1)
		p.rereadLimits()
		p.intake.requeue(w.ref, c, w.since)
		return
	case errors.Is(err, sink.ErrRejected) && object:
		p.counters.unacked.Add(1)
		p.giveUp(logger, w, err)
	default:
		p.counters.unacked.Add(1)
	}
	if c.Verb == informers.SnapshotEnd {
		p.markers.done(c.SnapshotID, markerResult{stored: f.endCount, err: err})
	}
	if object {
		p.intake.done(w.ref)
	}
}

// giveUp records a change that cannot be published in any form. A snapshot
// item is listed on its end marker every time; the log line and the count
// come once per resourceVersion.
func (p *pipeline) giveUp(logger klog.Logger, w work, err error) {
	c := w.c
	if c.Verb == informers.SnapshotItem {
		p.items.leftOut(c.SnapshotID, w.ref.key)
	}
	if !p.unpublishable.record(c) {
		return
	}
	p.metrics.Unpublishable.WithLabelValues(c.Resource.String()).Inc()
	logger.Error(err, "Cannot publish this object even without its content; it is left out until it changes",
		"resource", c.Resource.String(), "verb", c.Verb, "object", objectName(c.Object), "resourceVersion", resourceVersionOf(c.Object))
}

func finishEnvelope(env sink.Envelope, err error) {
	if env.Done != nil {
		env.Done(err)
	}
}

package bridge

import (
	"errors"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// flight is one work from its encoding to its outcome.
type flight struct {
	w intake.Work
	// stored counts the snapshot's items stored (items only).
	stored *atomic.Int64
	// endCount is the end marker's item count, taken when it is built.
	endCount int
	// enc is the message published, whose buffer settle hands back.
	enc encode.Encoded
	// budget is what the collector took from the byte budget for it.
	budget int64
}

// errUnencodable is the outcome of a change that cannot be encoded in any
// form.
var errUnencodable = errors.New("cannot be encoded")

// settle records the outcome of f's publish: the one place where metrics,
// the snapshot's counts, the end marker's result and the intake's Done for
// the object are told. It runs once per flight; a change rejected with its
// content goes back to the intake (Requeue) and comes again as a new
// flight, without its content.
func (p *pipeline) settle(logger klog.Logger, f *flight, err error) {
	p.budget.release(f.budget)
	w, c := f.w, f.w.Change
	if err == nil || errors.Is(err, sink.ErrRejected) {
		// Stored, or refused for good: neither nats.go nor the publisher
		// reads the message again. (After a shutdown or a fence a publish
		// may still be pending in nats.go; that buffer is left alone.)
		f.enc.Release()
	}
	object := w.Ref != (intake.Ref{})
	switch {
	case err == nil:
		resource := c.Resource.String()
		p.metrics.EventsPublished.WithLabelValues(resource, string(c.Verb)).Inc()
		if !w.Since.IsZero() {
			p.metrics.EventLag.WithLabelValues(resource).Observe(time.Since(w.Since).Seconds())
		}
		if f.stored != nil {
			f.stored.Add(1)
		}
		p.unpublishable.forget(c)
		if l := logger.V(6); l.Enabled() && object {
			l.Info("Published", "resource", resource, "verb", c.Verb, "object", objectName(c.Object), "resourceVersion", resourceVersionOf(c.Object),
				"coalesced", c.Coalesced, "truncated", w.Truncate)
		}
	case errors.Is(err, errUnencodable):
		p.giveUp(logger, w, err)
	case errors.Is(err, sink.ErrRejected) && object && !w.Truncate:
		// The stream's limits may have changed: read them again and
		// send the object without its content, in its turn.
		p.counters.unacked.Add(1)
		p.rereadLimits()
		p.intake.Requeue(w)
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
		p.intake.Done(w)
	}
}

// giveUp records a change that cannot be published in any form. A snapshot
// item is listed on its end marker every time; the log line and the count
// come once per resourceVersion.
func (p *pipeline) giveUp(logger klog.Logger, w intake.Work, err error) {
	c := w.Change
	if c.Verb == informers.SnapshotItem {
		p.items.leftOut(c.SnapshotID, w.Ref.Key)
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

package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/leader"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// termPublisher is the part of jetstream.JetStream startTerm needs.
type termPublisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// startTerm publishes this replica's term marker before anything else it
// publishes, retrying until it is stored or ctx ends, and returns the
// fence of the term: the marker's stream sequence. Every later event
// carries it (the term's encoder is made with it), and every publish is
// conditional on its subject's last sequence, so a replica that has been
// deposed, but does not know it yet, cannot overwrite what this term wrote.
//
// The marker itself is conditional on the last sequence of the term
// subject, read just before, and holds (nil without leader election) is
// asked before each attempt: a replica frozen between taking the Lease
// and storing its marker would otherwise store it after its successor's
// when it thaws, and its empty term would outrank the successor's for
// every consumer (contract §3), though the successor goes on publishing.
func startTerm(ctx context.Context, js termPublisher, stream termStream, enc *encode.Encoder, d contract.TermData, now time.Time, backoff time.Duration, holds func() error) (*sink.Fence, error) {
	logger := klog.FromContext(ctx)
	msg, err := enc.TermMarker(d, now)
	if err != nil {
		return nil, err
	}
	wait := backoff
	for attempt := 1; ; attempt++ {
		if holds != nil {
			if err := holds(); err != nil {
				return nil, fmt.Errorf("term marker: %w", err)
			}
		}
		seq, err := storeTermMarker(ctx, js, stream, msg)
		if err == nil {
			logger.Info("Term started: every event carries this term; a publish over a newer term's message is refused", "term", seq, "holder", d.Holder)
			return sink.NewFence(seq, streamTerms{stream: stream, subjects: enc.Subjects}, stream), nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("term marker: %w", ctx.Err())
		}
		if attempt == 1 {
			logger.Info("Cannot store the term marker yet; retrying until JetStream takes it", "subject", msg.Subject, "err", err)
		}
		if !sleep(ctx, wait) {
			return nil, fmt.Errorf("term marker: %w", ctx.Err())
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// storeTermMarker stores msg on its subject if no other marker came since
// the last one it reads there, and returns its stream sequence. A marker
// found in its place with its own id is its own, stored by an attempt
// whose acknowledgement was lost.
func storeTermMarker(ctx context.Context, js termPublisher, stream termStream, msg *nats.Msg) (uint64, error) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var last uint64
	switch m, err := stream.GetLastMsgForSubject(actx, msg.Subject); {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return 0, fmt.Errorf("read the last term marker: %w", err)
	case m.Header.Get(nats.MsgIdHdr) == msg.Header.Get(nats.MsgIdHdr):
		return m.Sequence, nil
	default:
		last = m.Sequence
	}
	msg.Header.Set(sink.HeaderExpectedLastSubjectSequence, strconv.FormatUint(last, 10))
	ack, err := js.PublishMsg(actx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// termStream is the part of jetstream.Stream a term's fence reads.
type termStream interface {
	sink.LastMsgGetter
	GetMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error)
}

// streamTerms reads terms as the contract defines them: an event's term
// is its ce-term header, and a term exists where a term marker of this
// cluster is stored at the stream sequence it names. A term marker of any
// shard of the cluster counts: after a change of the number of shards, a
// subject's last message is from its old shard, whose term is older than
// every term of the new set, and is overwritten as a deposed leader's.
type streamTerms struct {
	stream   termStream
	subjects contract.Subjects // this cluster's
}

func (s streamTerms) Of(h nats.Header) (uint64, bool) {
	if h.Get(contract.HeaderSpecVersion) == "" {
		return 0, false
	}
	term, err := contract.TermOf(h)
	return term, err == nil
}

func (s streamTerms) Marker(ctx context.Context, seq uint64) (sink.MarkerState, error) {
	m, err := s.stream.GetMsg(ctx, seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return sink.MarkerGone, nil
	case err != nil:
		return 0, fmt.Errorf("read stream sequence %d for its term marker: %w", seq, err)
	case s.isTermSubject(m.Subject) && m.Header.Get(contract.HeaderType) == contract.TypeTerm:
		return sink.MarkerStored, nil
	default:
		return sink.MarkerAbsent, nil
	}
}

func (s streamTerms) isTermSubject(subject string) bool {
	sub, err := s.subjects.Parse(subject)
	return err == nil && sub.Kind == contract.TermSubject
}

// endTerm ends what this replica publishes and says why. A replica that was
// deposed, or fenced by a newer term, has already dropped what it held and
// returns an error, so that it exits and restarts as a standby. Otherwise
// stop drains (nil: nothing was published yet), and only then is the Lease
// released, so that a standby takes over at once instead of after the
// lease duration.
func endTerm(ctx context.Context, el *leader.Elector, lm metrics.Leadership, fence *sink.Fence, stop func()) error {
	logger := klog.FromContext(ctx)
	if fence != nil && isClosed(fence.Fenced()) {
		lm.Leader.Set(0)
		lm.Transitions.Inc()
		lm.Term.Set(0)
		if el != nil {
			if rerr := el.Stop(klog.NewContext(context.WithoutCancel(ctx), logger)); rerr != nil {
				logger.Info("Could not release the Lease", "err", rerr)
			}
		}
		return fmt.Errorf("stopped publishing at once; exiting so that this replica restarts as a standby: %w", fence.Err())
	}
	if el != nil && isClosed(el.Deposed()) {
		lm.Leader.Set(0)
		lm.Term.Set(0)
		lm.Transitions.Inc()
		return leader.ErrDeposed
	}
	if stop != nil {
		stop()
	}
	if el != nil {
		if rerr := el.Stop(klog.NewContext(context.WithoutCancel(ctx), logger)); rerr != nil {
			logger.Info("Could not release the Lease; a standby takes over when it expires", "err", rerr)
		}
	}
	lm.Leader.Set(0)
	lm.Term.Set(0)
	return nil
}

// isClosed reports whether c is closed; a nil channel never is.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

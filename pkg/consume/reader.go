package consume

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/pkg/streamread"
)

// errConsumerLost is returned by a reader that may not recreate its
// consumer (during a bootstrap, which must start over instead); errStalled
// is the one of a consumer that delivered nothing (replaceStalled).
var (
	errConsumerLost = errors.New("consume: the consumer is gone")
	errStalled      = fmt.Errorf("%w: it delivered nothing", errConsumerLost)
)

// reader delivers the messages of one plain pull consumer in stream order.
// An ephemeral consumer the server lost (a restart of the server, which
// holds its state in memory; an inactivity timeout while disconnected) is
// recreated from the sequence after the last message delivered, when
// resume is set; a durable one from the sequence after the last
// acknowledged. So is an ephemeral consumer whose connection reconnected:
// it acknowledges nothing, so what the server wrote into the lost link
// would never come again.
type reader struct {
	js     jetstream.JetStream
	stream string
	cfg    jetstream.ConsumerConfig
	resume bool

	// str is the stream, asked directly by drained.
	str jetstream.Stream
	// cons knows where the stream stood when it was created: its last
	// sequence, read just after, and the messages it had pending.
	cons *streamread.Consumer
	it   jetstream.MessagesContext
	// from is the stream sequence the consumer had delivered up to when
	// it was created: nothing of its filters at or before it is to come.
	from uint64
	// lastSeq is the stream sequence of the last message delivered, acked
	// that of the last one acknowledged (durable consumers).
	lastSeq, acked uint64
	// lastMsgAt is when the last message was delivered, or the consumer
	// created; stall overrides stallAfter (tests).
	lastMsgAt time.Time
	stall     time.Duration
	// relinked is set, and the pull stopped, when the connection
	// reconnected under an ephemeral consumer; unwatch ends that watch.
	relinked atomic.Bool
	unwatch  func()
}

func (r *reader) durable() bool { return r.cfg.Durable != "" }

// open creates the consumer and starts pulling.
func (r *reader) open(ctx context.Context) error {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return fmt.Errorf("consume: stream %s: %w", r.stream, err)
	}
	// An ephemeral consumer the server dropped after a minute without a
	// pull is recreated by next.
	cons, err := streamread.Open(ctx, s, r.cfg)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	r.str, r.cons = s, cons
	r.from, r.lastMsgAt = cons.CachedInfo().Delivered.Stream, time.Now()
	if r.it, err = r.cons.Messages(jetstream.WithMessagesErrOnMissingHeartbeat(true)); err != nil {
		return fmt.Errorf("consume: pull from %s: %w", r.stream, err)
	}
	if !r.durable() {
		r.relinked.Store(false)
		r.unwatch = watchRelink(r.js.Conn(), r.it, &r.relinked)
	}
	return nil
}

// msg is one delivered message with its metadata.
type msg struct {
	jetstream.Msg
	meta *jetstream.MsgMetadata
}

func (m msg) natsMsg() *nats.Msg {
	return &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
}

// next returns the next message. With wait > 0 it returns a zero msg and
// no error when none came within wait.
func (r *reader) next(ctx context.Context, wait time.Duration) (msg, error) {
	for {
		nctx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			nctx, cancel = context.WithTimeout(ctx, wait)
		}
		m, err := r.it.Next(jetstream.NextContext(nctx))
		cancel()
		if err == nil {
			out, missed, aerr := r.accept(m)
			if !missed {
				return out, aerr
			}
			// Deliveries that never arrived, lost with a link: the
			// consumer goes, and the one made again starts where this
			// reader stands.
			r.cons.Delete(ctx)
			err = fmt.Errorf("%w: %v", jetstream.ErrConsumerDeleted, aerr)
		}
		if ctx.Err() != nil {
			return msg{}, ctx.Err()
		}
		if wait > 0 && errors.Is(err, context.DeadlineExceeded) {
			return msg{}, nil
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) && r.relinked.Swap(false) {
			// The consumer may live on: it goes, as the one made again
			// starts where this reader stands.
			r.cons.Delete(ctx)
			err = fmt.Errorf("%w: the connection reconnected", jetstream.ErrConsumerDeleted)
		}
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			// The server went quiet: the consumer may be gone with it.
			if _, ierr := r.cons.Info(ctx); ierr == nil || !errors.Is(ierr, jetstream.ErrConsumerNotFound) {
				continue
			}
			err = jetstream.ErrConsumerDeleted
		}
		if !errors.Is(err, jetstream.ErrConsumerDeleted) {
			return msg{}, fmt.Errorf("consume: pull from %s: %w", r.stream, err)
		}
		if !r.resume && !r.durable() {
			return msg{}, fmt.Errorf("%w: %v", errConsumerLost, err)
		}
		if err := r.recreate(ctx, err); err != nil {
			return msg{}, err
		}
	}
}

// stallAfter is how long a reader waits in vain for a message the stream
// holds before it takes its pull as lost. A pull the server serves sends
// its batch at once. Seen in hack/bench/fanout: a last-per-subject
// bootstrap stopped after 20,004 messages, until replaced; the server
// waits at each listed message removed meanwhile (see LastPerSubject).
const stallAfter = 10 * time.Second

// replaceStalled replaces the consumer when nothing came for stallAfter
// although the stream holds messages of its filters after the last one
// delivered (call it after next waited in vain, with drained false). A
// pull the server dropped without a word is otherwise never noticed by a
// reader waiting in short spells: nats.go watches a pull's heartbeats only
// within one call of Next. Like a lost consumer, it is recreated where it
// was, or errConsumerLost when it may not be.
func (r *reader) replaceStalled(ctx context.Context) error {
	quiet := time.Since(r.lastMsgAt)
	if quiet < r.stallAfter() {
		return nil
	}
	// What the server says of it tells a pull it dropped (no pull
	// waiting) from one it holds without serving it.
	kv := []any{"stream", r.stream, "quiet", quiet.Round(time.Second), "lastSeq", r.lastSeq}
	if info, err := r.cons.Info(ctx); err == nil {
		kv = append(kv, "consumer", info.Name, "pending", info.NumPending, "waitingPulls", info.NumWaiting, "deliveredSeq", info.Delivered.Stream)
	}
	klog.FromContext(ctx).Info("No message delivered although the stream holds more; replacing the consumer", kv...)
	if !r.resume && !r.durable() {
		return fmt.Errorf("%w for %v", errStalled, quiet.Round(time.Second))
	}
	r.cons.Delete(ctx)
	return r.recreate(ctx, fmt.Errorf("nothing delivered for %v", quiet.Round(time.Second)))
}

func (r *reader) stallAfter() time.Duration {
	if r.stall > 0 {
		return r.stall
	}
	return stallAfter
}

// recreate replaces a lost consumer by one that goes on where it was; why
// is what told it was lost.
func (r *reader) recreate(ctx context.Context, why error) error {
	// Before anything was delivered, from where the lost one started: a
	// DeliverNew consumer created again would skip what was stored since.
	from := max(r.lastSeq, r.from)
	if r.durable() {
		from = r.acked
	}
	if from > 0 || r.cfg.DeliverPolicy == jetstream.DeliverNewPolicy {
		r.cfg.DeliverPolicy, r.cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from+1
	}
	klog.FromContext(ctx).Info("Consumer lost; creating it again", "stream", r.stream, "fromSeq", from+1, "durable", r.cfg.Durable, "reason", why)
	r.stopPull()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := r.open(ctx)
		if err == nil {
			return nil
		}
		klog.FromContext(ctx).V(2).Info("Cannot create the consumer yet", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// handBack ends the pull of a durable consumer. The messages pulled but
// not handed out go back, to be delivered again at once rather than after
// the AckWait; and it returns only once the server has dropped the pull
// requests (a drained subscription closes after a round trip to the
// server). A request the server still held would take the next message
// stored, and the next reader would get it only after the AckWait.
func (r *reader) handBack() {
	if !r.durable() {
		return
	}
	r.it.Drain()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		m, err := r.it.Next(jetstream.NextMaxWait(250 * time.Millisecond))
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return
		}
		if err == nil {
			_ = m.Nak()
		}
	}
}

// caughtUp reports whether the consumer has nothing left to deliver. Call
// it only after next waited in vain, so that nothing is buffered.
func (r *reader) caughtUp(ctx context.Context) (bool, error) {
	info, err := r.cons.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("consume: consumer info: %w", err)
	}
	// A durable consumer also owes the messages handed back.
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// drained reports whether the stream holds nothing more for the reader:
// no message of its filters after the last one handed out (a durable
// consumer: after its acknowledgement floor, with nothing awaiting an
// acknowledgement). Unlike caughtUp it asks the stream, not the consumer's
// pending count, which the server raises only a moment after a message is
// stored: a durable consumer opened right after a write would be told
// nothing is pending. It holds whatever the reader has buffered.
func (r *reader) drained(ctx context.Context) (bool, error) {
	after := max(r.lastSeq, r.from)
	if r.durable() {
		info, err := r.cons.Info(ctx)
		if err != nil {
			return false, fmt.Errorf("consume: consumer info: %w", err)
		}
		if info.NumAckPending > 0 {
			return false, nil
		}
		after = info.AckFloor.Stream
	}
	subjects := r.cfg.FilterSubjects
	if r.cfg.FilterSubject != "" {
		subjects = append(subjects, r.cfg.FilterSubject)
	}
	for _, subject := range subjects {
		_, err := r.str.GetMsg(ctx, after+1, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("consume: look for messages on %s after seq %d: %w", subject, after, err)
		}
		return false, nil
	}
	return true, nil
}

// close stops pulling (handing back what a durable consumer pulled) and
// deletes an ephemeral consumer.
func (r *reader) close(ctx context.Context) {
	if r.it == nil {
		return
	}
	r.handBack()
	r.stopPull()
	r.cons.Delete(ctx)
}

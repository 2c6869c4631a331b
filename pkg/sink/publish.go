package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// publish sends env until it is acknowledged, rejected, or ctx ends. The
// message keeps its Nats-Msg-Id across attempts, so a retry of a message
// that was stored but whose ack was lost is dropped by JetStream. A message
// whose turn comes after ctx ended (one parked on a busy subject, say) is
// given up without an attempt. first, if made, is env's first attempt.
func (p *Publisher) publish(ctx context.Context, env Envelope, first sent) {
	if ctx.Err() != nil {
		finish(env, ErrShutdown)
		return
	}
	// The logger is looked up only where a line is written: the lookup
	// walks the context's chain, which showed in profiles of the running
	// bridge at about 1% of its CPU when made for every message.
	fence := p.opts.fence
	backoff := p.opts.minBackoff
	// resolved counts refusals in a row that the fence resolved: a subject
	// that keeps moving (another writer of the same term, which is a
	// misconfiguration) is retried with backoff rather than in a tight loop.
	resolved := 0
	for attempt := 0; ; attempt++ {
		s := first
		if first.made() {
			first = sent{}
		} else {
			s = p.send(env)
		}
		if s.refused != nil {
			finish(env, s.refused)
			return
		}
		ack, err := p.await(ctx, s)
		if err != nil && ctx.Err() != nil {
			// Cut short by our own shutdown: not an outcome.
			finish(env, ErrShutdown)
			return
		}
		if err == nil {
			p.stored(ctx, env, ack, s.start, attempt+1)
			return
		}
		p.active()
		if fence != nil && wrongLastSequence(err) {
			var finished, again bool
			finished, again, err = p.resolveConflict(ctx, env, s.start, err, &resolved)
			if finished {
				return
			}
			if again {
				continue
			}
		}
		if permanent(err) {
			err = fmt.Errorf("%w: %s: %w", ErrRejected, env.Msg.Subject, err)
			klog.FromContext(ctx).Error(err, "JetStream rejected a message; it is not retried", "msgID", env.Msg.Header.Get(jetstream.MsgIDHeader))
			p.opts.observer.Rejected(env.Msg, err)
			finish(env, err)
			return
		}
		p.opts.observer.Retried(env.Msg, err)
		if logger := klog.FromContext(ctx); p.failing.CompareAndSwap(false, true) {
			logger.Info("Publishing to JetStream failed; retrying with backoff until it succeeds", "subject", env.Msg.Subject, "err", err)
		} else {
			logger.V(4).Info("Publish retry", "subject", env.Msg.Subject, "attempt", attempt+1, "err", err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			finish(env, ErrShutdown)
			return
		}
		backoff = min(backoff*2, p.opts.maxBackoff)
	}
}

// stored records that env, sent at start, was stored after attempts
// attempts, and finishes it.
func (p *Publisher) stored(ctx context.Context, env Envelope, ack *jetstream.PubAck, start time.Time, attempts int) {
	p.active()
	if fence := p.opts.fence; fence != nil {
		fence.stored(env.Msg.Subject, ack.Sequence, env.Tombstone)
	}
	if p.failing.CompareAndSwap(true, false) {
		klog.FromContext(ctx).Info("Publishing to JetStream recovered", "subject", env.Msg.Subject, "attempts", attempts)
	}
	p.opts.observer.Acked(env.Msg, time.Since(start), ack.Duplicate)
	finish(env, nil)
}

// resolveConflict asks the fence about err, JetStream's refusal of the
// attempt made at start because the subject's last sequence was not the
// expected one. finished reports that env is done with (stored already,
// or fenced off by a newer term), again that it is to be sent again at
// once; otherwise the error returned is the attempt's failure, handled as
// any other. resolved counts the refusals in a row the fence resolved.
func (p *Publisher) resolveConflict(ctx context.Context, env Envelope, start time.Time, err error, resolved *int) (finished, again bool, _ error) {
	fence := p.opts.fence
	outcome, rerr := fence.resolve(ctx, env.Msg)
	switch outcome {
	case alreadyStored:
		p.opts.observer.Acked(env.Msg, time.Since(start), true)
		finish(env, nil)
		return true, false, nil
	case fenced:
		klog.FromContext(ctx).V(2).Info("Publish refused: a newer term writes this subject", "subject", env.Msg.Subject, "err", rerr)
		finish(env, rerr)
		return true, false, nil
	case retryOverForeign:
		klog.FromContext(ctx).Info("A foreign message was the last of the subject: no event of a term of this cluster; overwriting it", "err", rerr)
		fallthrough
	case retryNow:
		if *resolved++; *resolved < 3 {
			return false, true, nil
		}
		return false, false, fmt.Errorf("%s keeps moving under concurrent writes of term %d: %w", env.Msg.Subject, fence.Term(), err)
	case unresolved:
		return false, false, rerr
	}
	return false, false, err
}

// sent is one attempt to publish a message, sent and not awaited yet.
type sent struct {
	start  time.Time
	future jetstream.PubAckFuture
	// err is PublishMsgAsync's error, if it did not send.
	err error
	// refused is the fence's error if it let nothing more be sent.
	refused error
}

// made reports whether s is an attempt, rather than the zero value.
func (s sent) made() bool { return s.future != nil || s.err != nil || s.refused != nil }

// send makes one attempt to publish env, without waiting for its outcome.
func (p *Publisher) send(env Envelope) sent {
	if fence := p.opts.fence; fence != nil {
		if err := fence.admit(); err != nil {
			return sent{refused: err}
		}
		fence.condition(env.Msg)
	}
	s := sent{start: time.Now()}
	// PublishMsgAsync sets the reply subject on the message it is given;
	// a fresh copy keeps every attempt independent.
	msg := env.Msg
	s.future, s.err = p.js.PublishMsgAsync(&nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
	return s
}

// await waits for the outcome of the attempt s.
func (p *Publisher) await(ctx context.Context, s sent) (*jetstream.PubAck, error) {
	if s.err != nil {
		return nil, s.err
	}
	f := s.future
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func permanent(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrMessageTooLarge
}

func finish(env Envelope, err error) {
	if env.Done != nil {
		env.Done(err)
	}
}

type nopObserver struct{}

func (nopObserver) Acked(*nats.Msg, time.Duration, bool) {}
func (nopObserver) Retried(*nats.Msg, error)             {}
func (nopObserver) Rejected(*nats.Msg, error)            {}
func (nopObserver) InFlight(int)                         {}

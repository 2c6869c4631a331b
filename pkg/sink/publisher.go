package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// ErrRejected wraps a publish error that retrying cannot fix, such as a
// message larger than the server or stream accepts.
var ErrRejected = errors.New("sink: message rejected")

// ErrShutdown is passed to Done for messages still unacknowledged when the
// publisher's context ends.
var ErrShutdown = errors.New("sink: shut down before the message was acknowledged")

// jsErrMessageTooLarge is JetStream's API error code for a message above the
// stream's max_msg_size.
const jsErrMessageTooLarge = 10054

// AsyncPublisher is the part of jetstream.JetStream the publisher needs.
type AsyncPublisher interface {
	PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error)
}

// Envelope is one message to publish.
type Envelope struct {
	Msg *nats.Msg
	// Barrier makes the message wait until everything sent before it is
	// acknowledged, and holds everything after it until it is.
	Barrier bool
	// Build, if set on a barrier without Msg, makes the message when every
	// earlier one is settled, so it can report on them (a snapshot end
	// marker counts the items actually stored).
	Build func() (*nats.Msg, error)
	// Done, if set, is called once: with nil when the message is stored
	// (or was already, as a duplicate), or with the error it was given up for.
	Done func(error)
}

// Observer is told what happens to publishes. Implementations must be safe
// for concurrent use.
type Observer interface {
	Acked(msg *nats.Msg, latency time.Duration, duplicate bool)
	Retried(msg *nats.Msg, err error)
	Rejected(msg *nats.Msg, err error)
	InFlight(n int)
}

type options struct {
	window     int
	minBackoff time.Duration
	maxBackoff time.Duration
	observer   Observer
}

// Option configures a Publisher.
type Option func(*options) error

// WithWindow bounds the number of unacknowledged publishes.
func WithWindow(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("sink: window must be at least 1, got %d", n)
		}
		o.window = n
		return nil
	}
}

// WithBackoff sets the first and the longest wait between retries.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) error {
		if min <= 0 || max < min {
			return fmt.Errorf("sink: backoff must satisfy 0 < min <= max, got %v and %v", min, max)
		}
		o.minBackoff, o.maxBackoff = min, max
		return nil
	}
}

// WithObserver reports publish outcomes to obs.
func WithObserver(obs Observer) Option {
	return func(o *options) error { o.observer = obs; return nil }
}

// Publisher publishes Envelopes to JetStream.
type Publisher struct {
	js   AsyncPublisher
	opts options

	slots    chan struct{}
	mu       sync.Mutex
	bySubj   map[string]chan struct{}
	inFlight atomic.Int64
	failing  atomic.Bool
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js AsyncPublisher, opts ...Option) (*Publisher, error) {
	o := options{window: 512, minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second, observer: nopObserver{}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Publisher{js: js, opts: o, slots: make(chan struct{}, o.window), bySubj: map[string]chan struct{}{}}, nil
}

// InFlight is the number of publishes not yet acknowledged.
func (p *Publisher) InFlight() int { return int(p.inFlight.Load()) }

// Run publishes everything from in, in order per subject, until in is closed
// and every message is acknowledged, or ctx ends. Messages still pending when
// ctx ends get ErrShutdown. It returns ctx's error if ctx ended first.
func (p *Publisher) Run(ctx context.Context, in <-chan Envelope) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case env, ok := <-in:
			if !ok {
				return p.drain(ctx)
			}
			if err := p.dispatch(ctx, &wg, env); err != nil {
				finish(env, ErrShutdown)
				return err
			}
		}
	}
}

// drain waits until every slot is free, i.e. nothing is in flight.
func (p *Publisher) drain(ctx context.Context) error {
	held, err := p.acquire(ctx, p.opts.window)
	p.release(held)
	return err
}

func (p *Publisher) dispatch(ctx context.Context, wg *sync.WaitGroup, env Envelope) error {
	if env.Barrier {
		held, err := p.acquire(ctx, p.opts.window)
		if err != nil {
			p.release(held)
			return err
		}
		defer p.release(held)
		if env.Msg == nil && env.Build != nil {
			if env.Msg, err = env.Build(); err != nil {
				finish(env, err)
				return nil
			}
		}
		p.publish(ctx, env)
		return nil
	}
	subject := env.Msg.Subject
	p.mu.Lock()
	prev := p.bySubj[subject]
	p.mu.Unlock()
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	held, err := p.acquire(ctx, 1)
	if err != nil {
		p.release(held)
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.bySubj[subject] = done
	p.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.publish(ctx, env)
		p.mu.Lock()
		if p.bySubj[subject] == done {
			delete(p.bySubj, subject)
		}
		p.mu.Unlock()
		close(done)
		p.release(1)
	}()
	return nil
}

func (p *Publisher) acquire(ctx context.Context, n int) (int, error) {
	for i := 0; i < n; i++ {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
	return n, nil
}

func (p *Publisher) release(n int) {
	for i := 0; i < n; i++ {
		<-p.slots
	}
}

// publish sends env until it is acknowledged, rejected, or ctx ends. The
// message keeps its Nats-Msg-Id across attempts, so a retry of a message
// that was stored but whose ack was lost is dropped by JetStream.
func (p *Publisher) publish(ctx context.Context, env Envelope) {
	p.opts.observer.InFlight(int(p.inFlight.Add(1)))
	defer func() { p.opts.observer.InFlight(int(p.inFlight.Add(-1))) }()
	logger := klog.FromContext(ctx)
	backoff := p.opts.minBackoff
	for attempt := 0; ; attempt++ {
		start := time.Now()
		ack, err := p.attempt(ctx, env.Msg)
		if err == nil {
			if p.failing.CompareAndSwap(true, false) {
				logger.Info("Publishing to JetStream recovered", "subject", env.Msg.Subject, "attempts", attempt+1)
			}
			p.opts.observer.Acked(env.Msg, time.Since(start), ack.Duplicate)
			finish(env, nil)
			return
		}
		if ctx.Err() != nil {
			finish(env, ErrShutdown)
			return
		}
		if permanent(err) {
			err = fmt.Errorf("%w: %s: %w", ErrRejected, env.Msg.Subject, err)
			logger.Error(err, "JetStream rejected a message; it is not retried", "msgID", env.Msg.Header.Get(jetstream.MsgIDHeader))
			p.opts.observer.Rejected(env.Msg, err)
			finish(env, err)
			return
		}
		p.opts.observer.Retried(env.Msg, err)
		if p.failing.CompareAndSwap(false, true) {
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

func (p *Publisher) attempt(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	// PublishMsgAsync sets the reply subject on the message it is given;
	// a fresh copy keeps every attempt independent.
	f, err := p.js.PublishMsgAsync(&nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
	if err != nil {
		return nil, err
	}
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

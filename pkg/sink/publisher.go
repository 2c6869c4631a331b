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
// Like nats.go, which writes a message out as it publishes it, an
// implementation must not read a message after its future resolves: the
// message's owner may reuse it from then on.
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
	// Tombstone marks the last message of its subject for now (a delete):
	// once it is stored, a fence forgets the subject, so that the fence's
	// memory follows the live objects.
	Tombstone bool
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
	fence      *Fence
	acks       *Acks
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

// WithFence makes every publish conditional on its subject's last sequence
// (see Fence). Once f is fenced, nothing more is published: every message
// still held is given up with f.Err.
func WithFence(f *Fence) Option {
	return func(o *options) error { o.fence = f; return nil }
}

// WithAcks makes a's JetStream hand the publisher each acknowledgement,
// instead of a goroutine per message in flight waiting for it. The
// publisher's AsyncPublisher must be that JetStream: one made with
// a.JetStreamOptions.
func WithAcks(a *Acks) Option {
	return func(o *options) error {
		a.mu.Lock()
		installed := a.installed
		a.mu.Unlock()
		if !installed {
			return errAcksNotInstalled
		}
		o.acks = a
		return nil
	}
}

// Publisher publishes Envelopes to JetStream.
type Publisher struct {
	js   AsyncPublisher
	opts options

	// slots holds one token per accepted message that is not settled yet,
	// whether its publish is in flight or parked behind another one on its
	// subject; so the window bounds memory as well as unacknowledged
	// publishes. A barrier takes every token, which is how it waits for
	// everything before it.
	slots chan struct{}
	// pending counts the same messages for InFlight and the observer.
	pending atomic.Int64
	failing atomic.Bool
	// lastActivity is when the last attempt had an outcome, as the time
	// since created plus one (zero: never). An offset from a time.Time
	// keeps the monotonic reading, and storing it allocates nothing.
	created      time.Time
	lastActivity atomic.Int64

	// lanes counts the subjects with a message in flight or parked.
	lanes sync.WaitGroup

	mu sync.Mutex
	// busy has a lane for every subject with a publish in flight; it
	// holds the messages parked behind that publish, oldest first.
	busy map[string]*lane
	// idle holds lanes no subject uses, for the next to reuse: at most
	// one per window slot.
	idle []*lane
	// watched is the context the publisher watches for its lanes (see
	// watchLocked); nil until the first lane routed through Acks.
	watched context.Context
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js AsyncPublisher, opts ...Option) (*Publisher, error) {
	o := options{window: 512, minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second, observer: nopObserver{}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Publisher{js: js, opts: o, slots: make(chan struct{}, o.window), busy: map[string]*lane{}, created: time.Now()}, nil
}

// InFlight is the number of messages accepted and not yet settled: those
// being published and those parked behind a publish on their subject.
func (p *Publisher) InFlight() int { return int(p.pending.Load()) }

// LastActivity is when a publish attempt last had an outcome of any kind:
// acknowledged, failed and to be retried, or rejected. Attempts cut short by
// the publisher's own shutdown do not count. It is the zero time until the
// first outcome.
//
// It tells a publisher that keeps trying, such as while JetStream is down,
// from one that does nothing at all: failing attempts keep it moving, a
// stuck loop does not.
func (p *Publisher) LastActivity() time.Time {
	if d := p.lastActivity.Load(); d != 0 {
		return p.created.Add(time.Duration(d - 1))
	}
	return time.Time{}
}

// active records an outcome now (see LastActivity).
func (p *Publisher) active() { p.lastActivity.Store(int64(time.Since(p.created)) + 1) }

// Run publishes everything from in, in order per subject, until in is closed
// and every message is acknowledged, or ctx ends: Publish for each message,
// then Drain. It returns ctx's error if ctx ended first.
func (p *Publisher) Run(ctx context.Context, in <-chan Envelope) error {
	for {
		select {
		case <-ctx.Done():
			return p.Drain(ctx)
		case env, ok := <-in:
			if !ok || p.Publish(ctx, env) != nil {
				return p.Drain(ctx)
			}
		}
	}
}

// Publish hands env on, in order per subject, and returns without waiting
// for its publish, except that it waits for a slot in the window, and a
// barrier waits until it is stored. A message whose subject has a publish
// in flight is parked until that publish settles: one slow or failing
// subject does not hold back the others. Publish fails, giving env
// ErrShutdown, only when ctx ends before env was accepted; messages still
// pending when ctx ends get ErrShutdown too. Calls must not overlap: the
// order of the calls is the order messages are sent in.
func (p *Publisher) Publish(ctx context.Context, env Envelope) error {
	if err := p.dispatch(ctx, env); err != nil {
		finish(env, ErrShutdown)
		return err
	}
	return nil
}

// Drain waits until every message handed on is settled: acknowledged,
// given up, or, once ctx ends, given ErrShutdown. It returns ctx's error if
// ctx has ended. Like Publish it must not overlap another call of Publish:
// it waits for the lanes those calls start.
func (p *Publisher) Drain(ctx context.Context) error {
	// A subject's lane is counted while the subject has a message in
	// flight or parked (whether a goroutine or Acks settle it), and a
	// barrier is settled before Publish returns.
	p.lanes.Wait()
	return ctx.Err()
}

// barrier publishes env once everything accepted before it has settled.
func (p *Publisher) barrier(ctx context.Context, env Envelope) error {
	held, err := p.acquire(ctx, p.opts.window)
	defer p.release(held)
	if err != nil {
		return err
	}
	if env.Msg == nil && env.Build != nil {
		if env.Msg, err = env.Build(); err != nil {
			finish(env, err)
			return nil
		}
	}
	p.track(1)
	p.publish(ctx, env, sent{})
	p.track(-1)
	return nil
}

// track counts n more (or fewer) unsettled messages and tells the observer.
func (p *Publisher) track(n int64) {
	p.opts.observer.InFlight(int(p.pending.Add(n)))
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

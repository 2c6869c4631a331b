package consume

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// EventsOption configures Events.
type EventsOption func(*eventsOptions) error

type eventsOptions struct {
	durable       string
	deliver       jetstream.DeliverPolicy
	startSeq      uint64
	untilCaughtUp bool
	onFenced      func(*Event)
}

// Durable reads through the durable consumer name, created if missing:
// its position is kept by the server, so a restarted reader goes on where
// the last one stopped. Every event is acknowledged once the loop body
// has returned for it and the loop goes on; so delivery is at least once:
// an event the reader was busy with when it stopped (a break, a crash,
// a lost connection) is delivered again, and so are those pulled but not
// yet handled, possibly after later ones. The deliver options count only
// when the consumer is created.
func Durable(name string) EventsOption {
	return func(o *eventsOptions) error {
		if !streamNameRE.MatchString(name) {
			return fmt.Errorf("%w: durable name %q", ErrBadOption, name)
		}
		o.durable = name
		return nil
	}
}

// DeliverAll starts at the first message the stream holds (the default).
func DeliverAll() EventsOption {
	return func(o *eventsOptions) error {
		o.deliver, o.startSeq = jetstream.DeliverAllPolicy, 0
		return nil
	}
}

// DeliverNew starts with the first message stored after the consumer is
// created.
func DeliverNew() EventsOption {
	return func(o *eventsOptions) error {
		o.deliver, o.startSeq = jetstream.DeliverNewPolicy, 0
		return nil
	}
}

// DeliverFrom starts at stream sequence seq.
func DeliverFrom(seq uint64) EventsOption {
	return func(o *eventsOptions) error {
		if seq == 0 {
			return fmt.Errorf("%w: DeliverFrom(0); sequences start at 1", ErrBadOption)
		}
		o.deliver, o.startSeq = jetstream.DeliverByStartSequencePolicy, seq
		return nil
	}
}

// UntilCaughtUp ends the iteration once nothing more is pending, instead
// of waiting for new messages.
func UntilCaughtUp() EventsOption {
	return func(o *eventsOptions) error {
		o.untilCaughtUp = true
		return nil
	}
}

// OnFenced is called for every event skipped under the term rule: one a
// deposed leader stored after a newer term began.
func OnFenced(f func(*Event)) EventsOption {
	return func(o *eventsOptions) error {
		o.onFenced = f
		return nil
	}
}

// Events iterates over the events of the filters in stream order, from a
// pull consumer (ephemeral unless Durable). Each comes with its objects
// decoded. It yields:
//
//   - (event, nil) for every event of the filters, snapshot items and
//     markers included (a filter with a namespace or name gets no
//     markers); term markers are not yielded, and events of a deposed
//     leader's term are skipped (see OnFenced);
//   - (nil, *DecodeError) for a message that does not decode, and
//     (nil, *Violation) of kind Foreign for an event of the filters whose
//     term no term marker backs (not from a bridge of this cluster); the
//     iteration goes on if the loop does (a durable consumer does not
//     deliver either again);
//   - (nil, err) once for anything that ends it: the stream or consumer
//     cannot be read, or ctx ended (ctx.Err()).
//
// Breaking out of the loop ends it; with Durable the event in hand is
// handed back for redelivery. An ephemeral consumer is deleted at the end.
func (c *Client) Events(ctx context.Context, filters []Filter, opts ...EventsOption) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		fs, o, err := parseEventsArgs(filters, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		r := &reader{js: c.js, stream: c.stream, cfg: c.eventsConsumer(fs, o), resume: true}
		if err := r.open(ctx); err != nil {
			yield(nil, err)
			return
		}
		defer r.close(ctx)
		// The markers before where the consumer starts, read once it
		// exists so that none is missed; later ones it delivers.
		markers, err := readTerms(ctx, c.js, c.stream, c.subjects)
		if err != nil {
			yield(nil, err)
			return
		}
		var t shardTerms
		t.add(markers...)
		if o.untilCaughtUp {
			if drained, err := r.drained(ctx); err != nil || drained {
				if err != nil {
					yield(nil, err)
				}
				return
			}
		}
		e := eventLoop{c: c, r: r, fs: fs, o: o, terms: &t, logger: klog.FromContext(ctx)}
		e.run(ctx, yield)
	}
}

func parseEventsArgs(filters []Filter, opts []EventsOption) ([]filter, eventsOptions, error) {
	var o eventsOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, o, err
		}
	}
	fs, err := parseFilters(filters)
	return fs, o, err
}

func (c *Client) eventsConsumer(fs []filter, o eventsOptions) jetstream.ConsumerConfig {
	var subjects []string
	for _, f := range fs {
		subjects = append(subjects, f.eventSubjects(c.subjects)...)
	}
	// The term markers come along, so that the term rule sees them in
	// stream order.
	subjects = append(subjects, c.subjects.Terms()...)
	cfg := jetstream.ConsumerConfig{
		FilterSubjects: dedupe(subjects),
		DeliverPolicy:  o.deliver,
		OptStartSeq:    o.startSeq,
		AckPolicy:      jetstream.AckNonePolicy,
	}
	if o.durable != "" {
		cfg.Durable, cfg.AckPolicy = o.durable, jetstream.AckExplicitPolicy
	}
	return cfg
}

// eventLoop is one run of Events.
type eventLoop struct {
	c     *Client
	r     *reader
	fs    []filter
	o     eventsOptions
	terms *shardTerms
	// logger reports acknowledgements that fail.
	logger klog.Logger
}

func (e *eventLoop) run(ctx context.Context, yield func(*Event, error) bool) {
	for {
		wait := fetchWait
		if !e.o.untilCaughtUp {
			wait = 0
		}
		m, err := e.r.next(ctx, wait)
		if err != nil {
			yield(nil, err)
			return
		}
		if m.Msg != nil && !e.handle(m, yield) {
			return
		}
		// Ask once idle, or when the server says nothing is pending (a
		// moment late, which is why drained asks the stream).
		if m.Msg == nil || e.o.untilCaughtUp && m.meta.NumPending == 0 {
			drained, err := e.r.drained(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if drained {
				return
			}
			if m.Msg == nil {
				if err := e.r.replaceStalled(ctx); err != nil {
					yield(nil, err)
					return
				}
			}
		}
	}
}

// handle decodes, filters and yields one message, and settles it. It
// returns false when the loop broke.
func (e *eventLoop) handle(m msg, yield func(*Event, error) bool) bool {
	ev, err := e.c.dec.decode(m.meta.Sequence.Stream, m.natsMsg())
	if errors.Is(err, ErrUnsupportedContract) {
		// Nothing after it can be read right: the iteration ends.
		e.settle(m, m.Nak, false)
		yield(nil, err)
		return false
	}
	if err != nil {
		if !yield(nil, err) {
			e.settle(m, m.Nak, false)
			return false
		}
		// It will never decode: do not deliver it again.
		e.settle(m, m.Term, true)
		return true
	}
	terms := e.terms.of(ev.Shard)
	switch {
	case ev.Verb == Term:
		terms.markers.Add(ev.Seq)
	case terms.markers.Foreign(ev.Term, ev.Seq):
		if e.matches(ev) && !yield(nil, &Violation{Kind: Foreign, Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID(),
			Detail: fmt.Sprintf("term %d: no term marker of the cluster is stored at that sequence", ev.Term)}) {
			e.settle(m, m.Nak, false)
			return false
		}
	case terms.fenced(ev):
		if e.o.onFenced != nil && e.matches(ev) {
			e.o.onFenced(ev)
		}
	case !e.matches(ev):
	default:
		if !yield(ev, nil) {
			e.settle(m, m.Nak, false)
			return false
		}
	}
	e.settle(m, m.Ack, true)
	return true
}

func (e *eventLoop) matches(ev *Event) bool {
	for _, f := range e.fs {
		if f.matches(ev) {
			return true
		}
	}
	return false
}

// settle acknowledges (or naks, or terminates) a message of a durable
// consumer; an ephemeral one acknowledges nothing.
func (e *eventLoop) settle(m msg, how func() error, done bool) {
	if !e.r.durable() {
		return
	}
	err := how()
	if err != nil {
		// The server delivers the message again after AckWait: the
		// reader sees it twice, which is what at-least-once allows, but
		// it should know why.
		e.logger.Error(err, "Cannot settle a message with the durable consumer; it will be delivered again", "consumer", e.r.cfg.Durable, "seq", m.meta.Sequence.Stream, "subject", m.Subject())
		return
	}
	if done {
		e.r.acked = max(e.r.acked, m.meta.Sequence.Stream)
	}
}

package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/streamread"
)

// terms applies the term rule: in stream order, an event whose term is
// lower than the highest term already seen (a term marker's sequence, or
// any event's term) was written by a deposed leader after a newer term
// began, and is ignored. An event whose term no marker backs is foreign
// (see contract.Terms.Foreign): it is reported, and its term counts for
// nothing.
//
// The markers are contract.Terms, by sequence, rather than a running
// maximum, so the rule also holds for a reader that sees only some
// messages, such as the last message per subject: a marker counts for an
// event when it precedes the event in the stream, whether or not it was
// delivered before it.
type terms struct {
	markers contract.Terms
	highest uint64 // highest term of an event let through
}

// current is the highest term known before stream sequence seq.
func (t *terms) current(seq uint64) uint64 {
	return max(t.markers.Before(seq), t.highest)
}

// leads reports, without recording anything, whether an event of term
// stored at seq counts: its term is the leader's there, and a bridge of
// this cluster wrote it.
func (t *terms) leads(term, seq uint64) bool {
	return term >= t.current(seq) && !t.markers.Foreign(term, seq)
}

// fenced applies the rule to an event, and lets its term count for the
// events after it when it passes.
func (t *terms) fenced(ev *Event) bool {
	if ev.Term < t.current(ev.Seq) {
		return true
	}
	t.highest = max(t.highest, ev.Term)
	return false
}

// shardTerms applies the term rule per shard (docs/design/sharding.md):
// each shard's bridges write term markers on a subject of their own, and
// one shard's terms say nothing about another's events. An unsharded
// stream has one, the zero Shard's.
type shardTerms struct {
	m map[contract.Shard]*terms
}

// of is the terms of shard sh.
func (s *shardTerms) of(sh contract.Shard) *terms {
	sh = sh.Normal()
	t := s.m[sh]
	if t == nil {
		if s.m == nil {
			s.m = map[contract.Shard]*terms{}
		}
		t = &terms{}
		s.m[sh] = t
	}
	return t
}

// add records term markers.
func (s *shardTerms) add(markers ...TermMarker) {
	for _, m := range markers {
		s.of(m.Shard).markers.Add(m.Seq)
	}
}

// current is the highest term known before seq of any shard: what Stats
// reports.
func (s *shardTerms) current(seq uint64) uint64 {
	var out uint64
	for _, t := range s.m {
		out = max(out, t.current(seq))
	}
	return out
}

// TermMarker is a term marker read apart from the messages applied: where
// the stream stores it, and the shard whose term it begins (the zero
// Shard: the unsharded bridge's).
type TermMarker struct {
	Seq   uint64
	Shard contract.Shard
}

// readTerms returns the term markers the stream holds, of every shard,
// oldest first.
func readTerms(ctx context.Context, js jetstream.JetStream, stream string, subjects contract.Subjects) ([]TermMarker, error) {
	var out []TermMarker
	err := scanSubjects(ctx, js, stream, subjects.Terms(), func(seq uint64, subject string, h nats.Header) error {
		if h.Get(contract.HeaderType) != contract.TypeTerm {
			return nil
		}
		if err := checkContract(seq, h); err != nil {
			return err
		}
		sub, err := subjects.Parse(subject)
		if err != nil {
			// Not a term subject of this cluster: what the applier
			// reports when it reads the marker.
			return nil
		}
		out = append(out, TermMarker{Seq: seq, Shard: sub.Shard})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("consume: read the term markers: %w", err)
	}
	return out, nil
}

// scanSubject calls fn with the sequence and headers of every message on
// subject (a few: markers), oldest first, without their data.
func scanSubject(ctx context.Context, js jetstream.JetStream, stream, subject string, fn func(seq uint64, h nats.Header) error) error {
	return scanSubjects(ctx, js, stream, []string{subject}, func(seq uint64, _ string, h nats.Header) error { return fn(seq, h) })
}

// scanSubjects is scanSubject over several filter subjects, telling fn
// each message's subject.
func scanSubjects(ctx context.Context, js jetstream.JetStream, stream string, filters []string, fn func(seq uint64, subject string, h nats.Header) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	err = streamread.Read(ctx, s, jetstream.ConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckNonePolicy,
		HeadersOnly:    true,
		MemoryStorage:  true,
	}, streamread.Fetching{Batch: 256, Wait: fetchWait}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		return fn(meta.Sequence.Stream, m.Subject(), m.Headers())
	})
	if errors.Is(err, streamread.ErrMissed) {
		// Lost with a link: a bootstrap starts over, as when its own
		// consumer is lost.
		return fmt.Errorf("%w: %w", errConsumerLost, err)
	}
	return err
}

// fetchWait bounds one wait for a message when a reader must notice that
// nothing more is coming.
const fetchWait = 500 * time.Millisecond

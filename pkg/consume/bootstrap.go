package consume

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// plan is how a State reads: the consumer, and for a full replay where
// each type starts.
type plan struct {
	cfg jetstream.ConsumerConfig
	fs  []filter
	// from[i] is the first sequence applied of filter i's type: the begin
	// marker of its latest complete snapshot (0: from the first message).
	// One consumer serves every type, so it starts at the lowest; events
	// of a type before its own start are skipped, which makes the result
	// that of one replay per type.
	from []uint64
	// seed are messages applied before the replay: the last messages of
	// objects the latest end markers list as unpublished, stored before
	// the replay starts. Such an object exists but has no item; it is
	// kept only if the replay knows it.
	seed []*jetstream.RawStreamMsg
}

func (p plan) skip(ev *Event) bool {
	if p.from == nil || ev.Verb == Term {
		return false
	}
	for i, f := range p.fs {
		if f.ref.Covers(typeOf(ev.Resource)) {
			return ev.Seq < p.from[i]
		}
	}
	return false
}

// plan builds the bootstrap consumer. Both modes read the term subject
// too, so later term markers reach the Applier in stream order.
func (s *State) plan(ctx context.Context) (plan, error) {
	var subjects []string
	for _, f := range s.fs {
		subjects = append(subjects, f.stateSubjects(s.c.subjects)...)
	}
	subjects = append(subjects, s.c.subjects.Terms()...)
	p := plan{fs: s.fs, cfg: jetstream.ConsumerConfig{
		FilterSubjects: dedupe(subjects),
		AckPolicy:      jetstream.AckNonePolicy,
		// Both the stream's last message per subject and a replay are
		// wanted as fast as the server can send them.
		ReplayPolicy: jetstream.ReplayInstantPolicy,
	}}
	if s.mode == LastPerSubject {
		// A plain consumer: an ordered one recreates itself after a gap
		// from the next stream sequence, which goes on with messages that
		// are not the last of their subject.
		p.cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
		return p, nil
	}
	p.from = make([]uint64, len(s.fs))
	for i, f := range s.fs {
		shards, err := s.markerShards(ctx, f)
		if err != nil {
			return plan{}, err
		}
		// Each shard's snapshots frame its own objects: the type is
		// replayed from the earliest of its shards' starts, or from the
		// first message when one shard has no complete snapshot.
		var seeds []*jetstream.RawStreamMsg
		for j, sh := range shards {
			seq, end, err := s.latestSnapshotStart(ctx, f, sh)
			if err != nil {
				return plan{}, err
			}
			if j == 0 || seq < p.from[i] {
				p.from[i] = seq
			}
			if seq > 0 {
				seed, err := s.unpublished(ctx, f, end, seq)
				if err != nil {
					return plan{}, err
				}
				seeds = append(seeds, seed...)
			}
		}
		for _, m := range seeds {
			if m.Sequence < p.from[i] {
				p.seed = append(p.seed, m)
			}
		}
	}
	slices.SortFunc(p.seed, func(a, b *jetstream.RawStreamMsg) int { return cmp.Compare(a.Sequence, b.Sequence) })
	if start := slices.Min(p.from); start > 0 {
		p.cfg.DeliverPolicy, p.cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	} else {
		p.cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	return p, nil
}

// latestSnapshotStart is the sequence of the begin marker of the type's
// latest usable complete snapshot, and that snapshot's end marker: the
// last message on <type>._snapshot.end names it, and it is among the
// begin markers kept. When that end marker cannot be used (its term does
// not parse, or a deposed leader wrote it), the newest one before it that
// can: a replay from any complete snapshot a leader wrote ends in the same
// state. It is 0 when there is none.
func (s *State) latestSnapshotStart(ctx context.Context, f filter, sh contract.Shard) (uint64, *jetstream.RawStreamMsg, error) {
	stream, err := s.c.js.Stream(ctx, s.c.stream)
	if err != nil {
		return 0, nil, fmt.Errorf("consume: stream %s: %w", s.c.stream, err)
	}
	subjects := s.c.subjects.OfShard(sh)
	endSubject, beginSubject := subjects.SnapshotEnd(f.ref), subjects.SnapshotBegin(f.ref)
	end, err := stream.GetLastMsgForSubject(ctx, endSubject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("consume: last end marker of %s: %w", f.ref, err)
	}
	if !s.usableEnd(sh, end.Sequence, end.Header) {
		end = nil
		err = scanSubject(ctx, s.c.js, s.c.stream, endSubject, func(seq uint64, h nats.Header) error {
			if s.usableEnd(sh, seq, h) {
				end = &jetstream.RawStreamMsg{Subject: endSubject, Sequence: seq, Header: h}
			}
			return nil
		})
		if err != nil {
			return 0, nil, fmt.Errorf("consume: end markers of %s: %w", f.ref, err)
		}
		if end == nil {
			return 0, nil, nil
		}
	}
	id := end.Header.Get(contract.Header(contract.ExtSnapshotID))
	var begin uint64
	err = scanSubject(ctx, s.c.js, s.c.stream, beginSubject, func(seq uint64, h nats.Header) error {
		if seq < end.Sequence && h.Get(contract.Header(contract.ExtSnapshotID)) == id {
			begin = seq
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("consume: begin markers of %s: %w", f.ref, err)
	}
	return begin, end, nil
}

// usableEnd reports whether a replay may start from the snapshot the end
// marker of shard sh stored at seq with header h closes: its term parses,
// and is that of the shard's leader at seq.
func (s *State) usableEnd(sh contract.Shard, seq uint64, h nats.Header) bool {
	term, err := contract.TermOf(h)
	if err != nil {
		return false
	}
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.terms.of(sh).leads(term, seq)
}

// markerShards are the shards whose snapshot markers of f's type the
// stream holds, the unsharded bridge's first when it has any; just the
// unsharded one when it holds none.
func (s *State) markerShards(ctx context.Context, f filter) ([]contract.Shard, error) {
	stream, err := s.c.js.Stream(ctx, s.c.stream)
	if err != nil {
		return nil, fmt.Errorf("consume: stream %s: %w", s.c.stream, err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(s.c.subjects.Markers(f.ref)))
	if err != nil {
		return nil, fmt.Errorf("consume: marker subjects of %s: %w", f.ref, err)
	}
	var out []contract.Shard
	for subject := range info.State.Subjects {
		sub, err := s.c.subjects.Parse(subject)
		if err != nil || sub.Kind == contract.ObjectSubject || slices.Contains(out, sub.Shard) {
			continue
		}
		out = append(out, sub.Shard)
	}
	slices.SortFunc(out, func(a, b contract.Shard) int {
		return cmp.Or(cmp.Compare(a.Count, b.Count), cmp.Compare(a.Index, b.Index))
	})
	if len(out) == 0 {
		out = []contract.Shard{{}}
	}
	return out, nil
}

// unpublished returns the last messages, stored before the begin marker at
// seq, of the objects the end marker lists as unpublished.
func (s *State) unpublished(ctx context.Context, f filter, end *jetstream.RawStreamMsg, begin uint64) ([]*jetstream.RawStreamMsg, error) {
	ev, err := s.c.dec.decode(end.Sequence, &nats.Msg{Subject: end.Subject, Header: end.Header})
	if err != nil || len(ev.Unpublished) == 0 {
		// An undecodable end marker is reported when the replay reads it.
		return nil, nil
	}
	stream, err := s.c.js.Stream(ctx, s.c.stream)
	if err != nil {
		return nil, fmt.Errorf("consume: stream %s: %w", s.c.stream, err)
	}
	var out []*jetstream.RawStreamMsg
	for _, key := range ev.Unpublished {
		ns, name, namespaced := strings.Cut(key, "/")
		if !namespaced {
			ns, name = "", key
		}
		if f.Namespace != "" && f.Namespace != ns || f.Name != "" && f.Name != name {
			continue
		}
		m, err := stream.GetLastMsgForSubject(ctx, s.c.subjects.Object(typeOf(ev.Resource), ns, name))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("consume: last message of unpublished %s %s: %w", f.ref, key, err)
		}
		if m.Sequence < begin {
			out = append(out, m)
		}
	}
	return out, nil
}

package sink

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// ErrFenced is passed to Done, and returned by Fence.Err, once a newer term
// has written a subject this publisher writes: this publisher's term is
// over, and nothing it still holds may reach the stream.
var ErrFenced = errors.New("sink: fenced by a newer term")

// HeaderExpectedLastSubjectSequence makes JetStream store a message only
// if the last message on its subject has this sequence (0: none).
const HeaderExpectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence"

// LastMsgGetter is the part of jetstream.Stream a Fence needs.
type LastMsgGetter interface {
	GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error)
}

// TermReader tells a Fence which term wrote a stored message, and whether
// a term is real.
type TermReader interface {
	// Of reads the term a stored message was written in from its headers
	// (0: written before terms existed). ok is false for a message that is
	// none of the bridge's events: no CloudEvents headers, or a term that
	// is no number.
	Of(h nats.Header) (term uint64, ok bool)
	// Marker tells what stream sequence seq holds: a term marker of this
	// cluster (the proof that the term exists), another message, or
	// nothing any more.
	Marker(ctx context.Context, seq uint64) (MarkerState, error)
}

// MarkerState is what a stream sequence holds, for a term.
type MarkerState int

const (
	// MarkerStored: the sequence holds a term marker: the term exists.
	MarkerStored MarkerState = iota + 1
	// MarkerAbsent: the sequence holds another message: no term began
	// there.
	MarkerAbsent
	// MarkerGone: the sequence holds nothing (any more): the stream's
	// limits removed it, or it is beyond the last message.
	MarkerGone
)

// Origin is who wrote a stored message, as a Fence sees it.
type Origin int

const (
	// OwnTerm: this fence's term.
	OwnTerm Origin = iota + 1
	// NewerTerm: a term that began after this one: this writer is deposed.
	NewerTerm
	// OlderTerm: a term that ended, or a bridge from before terms.
	OlderTerm
	// Foreign: no term of this cluster: a message without CloudEvents
	// headers, or with a term that no term marker backs (published by
	// hand, or by something other than a bridge of this cluster). It is
	// overwritten, and never fences anyone.
	Foreign
)

// Fence makes every publish conditional on the last sequence of its
// subject, so that a writer whose term is over cannot overwrite what a
// newer term wrote. When JetStream refuses a publish because the subject
// moved on, the fence reads the subject's last message: written by a newer
// term, the publisher is fenced and stops; written by an older term (a
// deposed leader's late publish), by this one (an acknowledgement that was
// lost), or by no term at all (a foreign message: see Classify), the fence
// takes its sequence and the message is sent again.
//
// It remembers one sequence per subject, keyed by a hash of the subject
// (a collision costs one extra read, never a wrong write), about 24 bytes
// each, and forgets a subject once its tombstone is stored, so its entries
// follow the live objects (its memory, a Go map's, stays at their peak).
type Fence struct {
	term      uint64
	terms     TermReader
	stream    LastMsgGetter
	seed      maphash.Seed
	mu        sync.Mutex
	last      map[uint64]uint64
	fenced    chan struct{}
	fencedErr atomic.Pointer[error]
	once      sync.Once
	// guard, if set, is asked before every publish whether this writer
	// may still write.
	guard func() error
	// markers caches the terms found backed by a term marker (a few: one
	// per term), so that a term is checked once.
	markers map[uint64]bool
	// Counters of refusals by how they ended, and of foreign messages
	// found, for metrics.
	overwrote, adopted, foreign atomic.Int64
}

// NewFence returns the fence of term; terms tells it who wrote what.
func NewFence(term uint64, terms TermReader, stream LastMsgGetter) *Fence {
	return &Fence{term: term, terms: terms, stream: stream, seed: maphash.MakeSeed(), last: map[uint64]uint64{}, markers: map[uint64]bool{}, fenced: make(chan struct{})}
}

// ErrNotLeading is passed to Done, and returned by Fence.Err, once the
// fence's guard said this writer may no longer write: its term may be
// over, though no newer term has written one of its subjects yet.
var ErrNotLeading = errors.New("sink: this writer may no longer lead")

// Guard makes the fence ask check before every publish whether this
// writer may still write, as a leader whose Lease is stale may not. The
// first error fences it (wrapped in ErrNotLeading): nothing more is
// published. A newer term's messages fence a writer only on subjects
// that term has written; the guard also covers the others, such as the
// subject of an object created and deleted while this writer was frozen,
// that the newer term never writes. Call it before the first publish.
func (f *Fence) Guard(check func() error) { f.guard = check }

// Term is the term this fence publishes in.
func (f *Fence) Term() uint64 { return f.term }

// Fenced is closed once a newer term is seen, or the guard refused; Err
// then says which.
func (f *Fence) Fenced() <-chan struct{} { return f.fenced }

// Err is nil until the fence is fenced, then an error wrapping ErrFenced
// or ErrNotLeading.
func (f *Fence) Err() error {
	if p := f.fencedErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Overwrote counts refusals resolved by overwriting an older term's
// message; Adopted those where the last message was this term's own.
func (f *Fence) Overwrote() int64 { return f.overwrote.Load() }

// Adopted counts refusals where the subject's last message was already
// this term's, e.g. because an acknowledgement was lost.
func (f *Fence) Adopted() int64 { return f.adopted.Load() }

// Foreign counts the foreign messages found: by a refused publish, or by
// Observe.
func (f *Fence) Foreign() int64 { return f.foreign.Load() }

// Classify tells who wrote a stored message with header h. A term
// different from this fence's counts only where a term marker of this
// cluster backs it: at the stream sequence the term names. A newer term
// whose sequence holds no marker is foreign, unless this fence's own
// marker is gone too (then this writer is so far behind that the stream's
// limits removed the markers between: it takes the term as real).
func (f *Fence) Classify(ctx context.Context, h nats.Header) (Origin, uint64, error) {
	term, ok := f.terms.Of(h)
	switch {
	case !ok:
		return Foreign, 0, nil
	case term == f.term:
		return OwnTerm, term, nil
	case term == 0:
		return OlderTerm, term, nil
	}
	state, err := f.marker(ctx, term)
	if err != nil {
		return 0, term, err
	}
	if term > f.term {
		if state == MarkerStored {
			return NewerTerm, term, nil
		}
		own, err := f.marker(ctx, f.term)
		if err != nil {
			return 0, term, err
		}
		if own != MarkerStored {
			return NewerTerm, term, nil
		}
		return Foreign, term, nil
	}
	if state == MarkerAbsent {
		return Foreign, term, nil
	}
	// Stored, or gone with the stream's oldest messages: an older term.
	return OlderTerm, term, nil
}

// marker is terms.Marker, remembering the terms found real.
func (f *Fence) marker(ctx context.Context, seq uint64) (MarkerState, error) {
	f.mu.Lock()
	known := f.markers[seq]
	f.mu.Unlock()
	if known {
		return MarkerStored, nil
	}
	state, err := f.terms.Marker(ctx, seq)
	if err == nil && state == MarkerStored {
		f.mu.Lock()
		f.markers[seq] = true
		f.mu.Unlock()
	}
	return state, err
}

// Observe is Seed for a subject read by a scan of the stream, with the
// headers of its last message: a foreign one is counted and logged, as a
// refused publish over it would be (the scan's seeding spares that
// refusal). It reports whether the message is foreign.
func (f *Fence) Observe(ctx context.Context, subject string, seq uint64, h nats.Header) bool {
	f.Seed(subject, seq)
	origin, term, err := f.Classify(ctx, h)
	if err != nil || origin != Foreign {
		return false
	}
	f.foreign.Add(1)
	klog.FromContext(ctx).Info("A foreign message is the last of its subject: no event of a term of this cluster. The object's next publish overwrites it (its start-up snapshot, where the cluster has the object); readers report it", "subject", subject, "seq", seq, "term", term)
	return true
}

// Seed records that subject's last message has sequence seq, as read by a
// scan of the stream, unless a later one is already known: sequences only
// grow, and a scan may finish after a publish on the same subject.
func (f *Fence) Seed(subject string, seq uint64) {
	k := maphash.String(f.seed, subject)
	f.mu.Lock()
	if seq > f.last[k] {
		f.last[k] = seq
	}
	f.mu.Unlock()
}

// expect is the sequence the next publish on subject must find.
func (f *Fence) expect(subject string) uint64 {
	k := maphash.String(f.seed, subject)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[k]
}

// stored records that subject's last message now has sequence seq.
func (f *Fence) stored(subject string, seq uint64, forget bool) {
	k := maphash.String(f.seed, subject)
	f.mu.Lock()
	if forget {
		delete(f.last, k)
	} else {
		f.last[k] = seq
	}
	f.mu.Unlock()
}

// size is the number of subjects remembered.
func (f *Fence) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.last)
}

func (f *Fence) fence(err error) {
	f.once.Do(func() {
		f.fencedErr.Store(&err)
		close(f.fenced)
	})
}

// admit returns nil if a publish may be sent: the fence is not fenced,
// and its guard, if any, lets this writer write; else why not.
func (f *Fence) admit() error {
	select {
	case <-f.fenced:
		return f.Err()
	default:
	}
	if f.guard != nil {
		if err := f.guard(); err != nil {
			f.fence(fmt.Errorf("%w: %w", ErrNotLeading, err))
			return f.Err()
		}
	}
	return nil
}

// condition sets the expected last subject sequence on msg's headers.
func (f *Fence) condition(msg *nats.Msg) {
	msg.Header.Set(HeaderExpectedLastSubjectSequence, strconv.FormatUint(f.expect(msg.Subject), 10))
}

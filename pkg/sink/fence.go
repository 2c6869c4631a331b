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

// Fence makes every publish conditional on the last sequence of its
// subject, so that a writer whose term is over cannot overwrite what a
// newer term wrote. When JetStream refuses a publish because the subject
// moved on, the fence reads the subject's last message: written by a newer
// term, the publisher is fenced and stops; written by an older term (a
// deposed leader's late publish) or by this one (an acknowledgement that
// was lost), the fence takes its sequence and the message is sent again.
//
// It remembers one sequence per subject, keyed by a hash of the subject
// (a collision costs one extra read, never a wrong write), about 24 bytes
// each, and forgets a subject once its tombstone is stored, so its entries
// follow the live objects (its memory, a Go map's, stays at their peak).
type Fence struct {
	term      uint64
	termOf    func(nats.Header) (uint64, error)
	stream    LastMsgGetter
	seed      maphash.Seed
	mu        sync.Mutex
	last      map[uint64]uint64
	fenced    chan struct{}
	fencedErr atomic.Pointer[error]
	once      sync.Once
	// Counters of refusals by how they ended, for metrics.
	overwrote, adopted atomic.Int64
}

// NewFence returns the fence of term. termOf reads the term a stored
// message was written in from its headers (0 when it has none).
func NewFence(term uint64, termOf func(nats.Header) (uint64, error), stream LastMsgGetter) *Fence {
	return &Fence{term: term, termOf: termOf, stream: stream, seed: maphash.MakeSeed(), last: map[uint64]uint64{}, fenced: make(chan struct{})}
}

// Term is the term this fence publishes in.
func (f *Fence) Term() uint64 { return f.term }

// Fenced is closed once a newer term is seen; Err then says which.
func (f *Fence) Fenced() <-chan struct{} { return f.fenced }

// Err is nil until the fence is fenced, then an error wrapping ErrFenced.
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

// refusal is what a refused publish turned out to be.
type refusal int

const (
	// retryNow: the fence now knows the subject's last sequence; send again.
	retryNow refusal = iota
	// alreadyStored: the subject's last message is this very message.
	alreadyStored
	// fenced: a newer term wrote the subject.
	fenced
	// unresolved: the last message could not be read; retry with backoff.
	unresolved
)

// resolve reads the last message of msg's subject after JetStream refused
// msg for an unexpected last sequence.
func (f *Fence) resolve(ctx context.Context, msg *nats.Msg) (refusal, error) {
	last, err := f.stream.GetLastMsgForSubject(ctx, msg.Subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Emptied meanwhile: a tombstone expired, or the stream was purged.
		f.stored(msg.Subject, 0, false)
		return retryNow, nil
	}
	if err != nil {
		return unresolved, fmt.Errorf("sink: read the last message of %s after a refused publish: %w", msg.Subject, err)
	}
	id := msg.Header.Get(jetstream.MsgIDHeader)
	if id != "" && last.Header.Get(jetstream.MsgIDHeader) == id {
		f.stored(msg.Subject, last.Sequence, false)
		f.adopted.Add(1)
		return alreadyStored, nil
	}
	term, err := f.termOf(last.Header)
	if err != nil {
		return unresolved, fmt.Errorf("sink: last message of %s (sequence %d): %w", msg.Subject, last.Sequence, err)
	}
	if term > f.term {
		err := fmt.Errorf("%w: %s holds sequence %d of term %d, this publisher's term is %d", ErrFenced, msg.Subject, last.Sequence, term, f.term)
		f.fence(err)
		return fenced, err
	}
	if term == f.term {
		f.adopted.Add(1)
	} else {
		f.overwrote.Add(1)
	}
	f.stored(msg.Subject, last.Sequence, false)
	return retryNow, nil
}

func (f *Fence) fence(err error) {
	f.once.Do(func() {
		f.fencedErr.Store(&err)
		close(f.fenced)
	})
}

// isFenced reports whether a newer term has been seen.
func (f *Fence) isFenced() bool {
	select {
	case <-f.fenced:
		return true
	default:
		return false
	}
}

// condition sets the expected last subject sequence on msg's headers.
func (f *Fence) condition(msg *nats.Msg) {
	msg.Header.Set(HeaderExpectedLastSubjectSequence, strconv.FormatUint(f.expect(msg.Subject), 10))
}

// wrongLastSequence reports whether err is JetStream refusing a publish
// for its expected last subject sequence.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

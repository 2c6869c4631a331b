package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// refusal is what a refused publish turned out to be.
type refusal int

const (
	// retryNow: the fence now knows the subject's last sequence; send again.
	retryNow refusal = iota
	// retryOverForeign: retryNow, over a foreign message.
	retryOverForeign
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
	origin, term, err := f.Classify(ctx, last.Header)
	if err != nil {
		return unresolved, fmt.Errorf("sink: last message of %s (sequence %d): term %d: %w", msg.Subject, last.Sequence, term, err)
	}
	f.stored(msg.Subject, last.Sequence, false)
	switch origin {
	case NewerTerm:
		err := fmt.Errorf("%w: %s holds sequence %d of term %d, this publisher's term is %d", ErrFenced, msg.Subject, last.Sequence, term, f.term)
		f.fence(err)
		return fenced, err
	case Foreign:
		f.foreign.Add(1)
		return retryOverForeign, fmt.Errorf("%s holds foreign sequence %d (term %d)", msg.Subject, last.Sequence, term)
	case OwnTerm:
		f.adopted.Add(1)
	default:
		f.overwrote.Add(1)
	}
	return retryNow, nil
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

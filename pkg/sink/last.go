package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lastBatch is how many messages one fetch asks for while reading the last
// message per subject.
const lastBatch = 2048

// Tail reads what a stream holds last for each subject. It is how the
// bridge learns, after a restart, which objects the stream still shows.
type Tail struct {
	Stream jetstream.Stream
}

// LastPerSubject calls fn with the subject, stream sequence and headers of the last message
// of every subject matching filter, without their data, so that even 100k
// subjects are read in seconds. It stops at fn's first error.
//
// It uses a plain ephemeral pull consumer: an ordered consumer recreates
// itself after a gap from the next stream sequence, which would go on with
// messages that are not the last of their subject.
func (t Tail) LastPerSubject(ctx context.Context, filter string, fn func(subject string, seq uint64, header nats.Header) error) error {
	c, err := t.Stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubjects:    []string{filter},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       true,
		MemoryStorage:     true,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("sink: read the last message per subject of %s: %w", filter, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = t.Stream.DeleteConsumer(dctx, c.CachedInfo().Name)
	}()
	left := c.CachedInfo().NumPending
	for left > 0 {
		// A fetch returns when its batch is full: ask for what is pending.
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		batch, err := c.Fetch(int(min(left, lastBatch)), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return fmt.Errorf("sink: read the last message per subject of %s: %w", filter, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				cancel()
				return fmt.Errorf("sink: read the last message per subject of %s: %w", filter, err)
			}
			if err := fn(m.Subject(), meta.Sequence.Stream, m.Headers()); err != nil {
				cancel()
				return err
			}
			left = meta.NumPending
		}
		err = batch.Error()
		cancel()
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("sink: read the last message per subject of %s: %w", filter, err)
		}
		if got == 0 {
			// What was pending went away meanwhile (expired or purged).
			break
		}
	}
	return nil
}

// Last returns the last message stored on subject, with its data.
func (t Tail) Last(ctx context.Context, subject string) (*nats.Msg, error) {
	raw, err := t.Stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return nil, fmt.Errorf("sink: last message of %s: %w", subject, err)
	}
	return &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}, nil
}

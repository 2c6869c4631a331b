package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/streamread"
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
	return t.headers(ctx, []string{filter}, jetstream.DeliverLastPerSubjectPolicy, fn)
}

// Every calls fn with the subject, stream sequence and headers of every
// message on the subjects matching filters, oldest first, without their
// data: for subjects that hold a few messages, such as term markers. It
// stops at fn's first error.
func (t Tail) Every(ctx context.Context, filters []string, fn func(subject string, seq uint64, header nats.Header) error) error {
	return t.headers(ctx, filters, jetstream.DeliverAllPolicy, fn)
}

func (t Tail) headers(ctx context.Context, filters []string, policy jetstream.DeliverPolicy, fn func(subject string, seq uint64, header nats.Header) error) error {
	var fnErr error
	err := streamread.Read(ctx, t.Stream, jetstream.ConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  policy,
		AckPolicy:      jetstream.AckNonePolicy,
		HeadersOnly:    true,
		MemoryStorage:  true,
	}, streamread.Fetching{Batch: lastBatch, Wait: 10 * time.Second}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		fnErr = fn(m.Subject(), meta.Sequence.Stream, m.Headers())
		return fnErr
	})
	// fn's own error goes back as it is.
	if err != nil && !errors.Is(err, fnErr) {
		return fmt.Errorf("sink: read %s: %w", strings.Join(filters, ", "), err)
	}
	return err
}

// Last returns the last message stored on subject, with its data, and its
// stream sequence.
func (t Tail) Last(ctx context.Context, subject string) (*nats.Msg, uint64, error) {
	raw, err := t.Stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return nil, 0, fmt.Errorf("sink: last message of %s: %w", subject, err)
	}
	return &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}, raw.Sequence, nil
}

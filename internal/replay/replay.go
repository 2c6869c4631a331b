package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ExtCoalesced is the extension of an event that stands for several
// changes of one object merged while they waited: on added, updated and
// deleted events the number of changes (an integer ≥ 2; absent means
// one); on a snapshot item the number of live changes it superseded (≥ 1;
// absent means none). It is spelled out here rather than taken from
// pkg/encode so the reference consumer follows the contract, not the
// producer's code.
const ExtCoalesced = "coalesced"

// Message is one stored message, decoded.
type Message struct {
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
	Event   *event.Event
	// Stored is when JetStream stored the message (zero for messages
	// not read from a stream).
	Stored time.Time
}

// Ext returns a string extension of the message's event.
func (m Message) Ext(name string) string {
	v, _ := m.Event.Extensions()[name].(string)
	return v
}

// Coalesced returns the coalesced extension: for an added, updated or
// deleted event the number of changes it stands for (1 without the
// extension), for a snapshot item the number of live changes it
// superseded (0 without it). It fails for a value the contract does not
// allow: not an integer, below 2 on a live event, below 1 on an item.
func (m Message) Coalesced() (int, error) {
	least, absent := 2, 1
	if m.Event.Type() == contract.TypeSnapshotItem {
		// An item is no change of its own; superseding a single pending
		// change is worth saying.
		least, absent = 1, 0
	}
	v, ok := m.Event.Extensions()[ExtCoalesced]
	if !ok {
		return absent, nil
	}
	n, err := types.ToInteger(v)
	if err != nil {
		return 0, fmt.Errorf("replay: %s extension %v: %w", ExtCoalesced, v, err)
	}
	if int(n) < least {
		return 0, fmt.Errorf("replay: %s extension %d on %s: must be at least %d when present", ExtCoalesced, n, m.Event.Type(), least)
	}
	return int(n), nil
}

// ReadAll returns every message of stream matching filter (empty: all),
// oldest first, decoded with cenats.Decode. Messages that are no
// CloudEvents at all are left out, as consumers skip them.
func ReadAll(ctx context.Context, js jetstream.JetStream, stream, filter string) ([]Message, error) {
	var out []Message
	err := ForEach(ctx, js, stream, filter, func(m Message) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForEach calls f for every message of stream matching filter (empty:
// all), oldest first, decoded with cenats.Decode, without holding them
// all in memory. It stops at the first message after which none is
// pending. An error from f ends the read and is returned.
func ForEach(ctx context.Context, js jetstream.JetStream, stream, filter string, f func(Message) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return err
	}
	for {
		batch, err := c.FetchNoWait(1000)
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			ev, err := cenats.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			switch {
			case errors.Is(err, cenats.ErrNotCloudEvent):
				// Foreign: no event of the contract, as a consumer skips it.
			case err != nil:
				return fmt.Errorf("seq %d: %w", meta.Sequence.Stream, err)
			default:
				if err := f(Message{Seq: meta.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Event: ev, Stored: meta.Timestamp}); err != nil {
					return err
				}
			}
			if meta.NumPending == 0 {
				return batch.Error()
			}
		}
		if err := batch.Error(); err != nil {
			return err
		}
		if n == 0 {
			// The stream may still be receiving; give it a moment.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

package streamread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrMissed is returned by ReadAll when the server delivered messages that
// never reached the reader: written into a link that was lost before they
// arrived (the connection reconnected meanwhile), or fetched by another
// client of the consumer. A consumer without acknowledgements never sends
// them again, so the read is incomplete; read again.
var ErrMissed = errors.New("streamread: messages delivered to the consumer did not arrive")

// Fetching is how ReadAll pulls: up to Batch messages a request, waiting at
// most Wait for them.
type Fetching struct {
	Batch int
	Wait  time.Duration
}

// ReadAll calls fn with every message the consumer delivers, oldest first,
// until Reached, and returns fn's first error. Messages that were pending
// but went away before they were delivered (expired, purged, rolled up) are
// not waited for: after a fetch that brought nothing it asks the consumer
// what is still pending. It returns ErrMissed when a delivery did not
// arrive: the consumer's delivery sequence, which counts each message it
// sent, skipped one, or stood past the last one received.
func (c *Consumer) ReadAll(ctx context.Context, f Fetching, fn func(m jetstream.Msg, meta *jetstream.MsgMetadata) error) error {
	for left := c.Pending; left > 0; {
		// A fetch returns when its batch is full: ask for what is pending.
		fctx, cancel := context.WithTimeout(ctx, f.Wait)
		after, done, err := c.fetch(fctx, int(min(left, uint64(f.Batch))), fn)
		cancel()
		if err != nil || done {
			return err
		}
		if after > 0 {
			left = after
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.Delivered.Consumer > c.received {
			return fmt.Errorf("%w: %d sent, %d received", ErrMissed, info.Delivered.Consumer, c.received)
		}
		left = info.NumPending
	}
	return nil
}

// Received records a message of a consumer without acknowledgements as
// received, or returns ErrMissed when it does not follow the last one
// received: the consumer's delivery sequence counts every message it
// sent, so one skipped was sent and lost.
func (c *Consumer) Received(meta *jetstream.MsgMetadata) error {
	if d := meta.Sequence.Consumer; d != c.received+1 {
		return fmt.Errorf("%w: delivery %d after %d", ErrMissed, d, c.received)
	}
	c.received = meta.Sequence.Consumer
	return nil
}

// fetch hands one batch to fn. It returns whether the last message wanted
// came, and if not how many the consumer still had pending after the last
// one delivered: 0 when none came (Reached holds where nothing is pending).
func (c *Consumer) fetch(ctx context.Context, n int, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) (after uint64, done bool, err error) {
	batch, err := c.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, false, err
	}
	for m := range batch.Messages() {
		meta, err := m.Metadata()
		if err != nil {
			return 0, false, err
		}
		if err := c.Received(meta); err != nil {
			return 0, false, err
		}
		if err := fn(m, meta); err != nil {
			return 0, false, err
		}
		if c.Reached(meta) {
			return 0, true, nil
		}
		after = meta.NumPending
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return 0, false, err
	}
	return after, false, nil
}

// Read creates an ephemeral consumer on s with cfg, calls fn with what it
// delivers up to where the stream stood once it existed, and deletes it.
func Read(ctx context.Context, s jetstream.Stream, cfg jetstream.ConsumerConfig, f Fetching, fn func(m jetstream.Msg, meta *jetstream.MsgMetadata) error) error {
	c, err := Open(ctx, s, cfg)
	if err != nil {
		return err
	}
	defer c.Delete(ctx)
	return c.ReadAll(ctx, f, fn)
}

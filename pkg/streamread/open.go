package streamread

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// inactiveThreshold is how long the server keeps an ephemeral consumer
// nobody pulls from: one whose reader went away without deleting it does
// not stay.
const inactiveThreshold = time.Minute

// Consumer is a pull consumer together with where the stream stood once it
// existed.
type Consumer struct {
	jetstream.Consumer
	stream jetstream.Stream
	// LastSeq is the stream's last sequence, read just after the consumer
	// was created.
	LastSeq uint64
	// Pending is how many messages the consumer had pending when created.
	Pending uint64
	// received is the delivery sequence of the last message received
	// (ReadAll, Received).
	received uint64
}

// Open creates a pull consumer on s with cfg, durable (created or updated)
// when cfg.Durable is set, else ephemeral with an inactivity threshold and
// its state in memory, and then reads the stream's last sequence. Its errors name the stream.
func Open(ctx context.Context, s jetstream.Stream, cfg jetstream.ConsumerConfig) (*Consumer, error) {
	name := s.CachedInfo().Config.Name
	var c jetstream.Consumer
	var err error
	if cfg.Durable != "" {
		c, err = s.CreateOrUpdateConsumer(ctx, cfg)
	} else {
		if cfg.InactiveThreshold == 0 {
			cfg.InactiveThreshold = inactiveThreshold
		}
		// Its state is held in memory, as nats.go's ordered consumer
		// holds it: on a file stream the server would otherwise write it
		// to file as it delivers (23% of nats-server's CPU in
		// hack/bench/fanout with 20 readers). A restart of the server
		// loses it; its reader creates it again where it stood.
		cfg.MemoryStorage = true
		c, err = s.CreateConsumer(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("create a consumer on %s: %w", name, err)
	}
	info := c.CachedInfo()
	out := &Consumer{Consumer: c, stream: s, Pending: info.NumPending, received: info.Delivered.Consumer}
	// Only now, not before the consumer exists: see the package comment.
	sinfo, err := s.Info(ctx)
	if err != nil {
		out.Delete(ctx)
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	out.LastSeq = sinfo.State.LastSeq
	return out, nil
}

// Reached reports whether the message with meta is the last one the reader
// waits for: nothing is pending after it, or it is at or past the stream's
// last sequence when the consumer was created.
func (c *Consumer) Reached(meta *jetstream.MsgMetadata) bool {
	return meta.NumPending == 0 || meta.Sequence.Stream >= c.LastSeq
}

// Delete removes an ephemeral consumer; a durable one stays. It is given a
// few seconds even when ctx has ended, as a reader's deferred clean-up.
func (c *Consumer) Delete(ctx context.Context) {
	if c.CachedInfo().Config.Durable != "" {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = c.stream.DeleteConsumer(dctx, c.CachedInfo().Name)
}

package consume

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// How a reader of an ephemeral consumer notices messages sent that never
// reached it. Such a consumer takes no acknowledgement: what the server
// wrote into a link lost before the reader got it counts as delivered and
// is never sent again. Two signs tell: the connection reconnected (the
// watch below), and a delivery sequence that skips (accept). Either way
// the reader creates its consumer again from the message after the last
// one it handed out.

// watchRelink stops it and sets relinked when nc reconnects. It is how a
// reader of an ephemeral consumer learns at once that the server may have
// lost the consumer with its memory, or written messages into the lost
// link (as nats.go's ordered consumer recreates itself on a reconnect);
// the pull's heartbeats would tell only after twice their interval, 30 s.
func watchRelink(nc *nats.Conn, it jetstream.MessagesContext, relinked *atomic.Bool) (stop func()) {
	status := nc.StatusChanged(nats.RECONNECTING, nats.CONNECTED)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		down := false
		for {
			select {
			case s, ok := <-status:
				if !ok {
					return
				}
				if s == nats.RECONNECTING {
					down = true
				} else if down {
					relinked.Store(true)
					it.Stop()
					return
				}
			case <-done:
				return
			}
		}
	}()
	// Once stop returns, the watch sets relinked no more: a reader that
	// replaced its pull does not take the next one's end for a reconnect.
	return func() {
		close(done)
		<-exited
		nc.RemoveStatusListener(status)
	}
}

// stopPull stops pulling and the watch for a reconnect.
func (r *reader) stopPull() {
	if r.unwatch != nil {
		r.unwatch()
		r.unwatch = nil
	}
	r.it.Stop()
}

// accept checks a delivered message and makes it the last one. missed
// reports a message of an ephemeral consumer that does not follow the
// last one delivered: the consumer's delivery sequence counts every
// message it sent, so one skipped was sent and lost (into a link lost
// before the reader noticed the reconnect).
func (r *reader) accept(m jetstream.Msg) (_ msg, missed bool, _ error) {
	meta, err := m.Metadata()
	if err != nil {
		return msg{}, false, fmt.Errorf("consume: %w", err)
	}
	seq := meta.Sequence.Stream
	if !r.durable() {
		// Everything here rests on stream order; only a durable
		// consumer delivers an earlier message again (a redelivery).
		if seq <= r.lastSeq {
			return msg{}, false, fmt.Errorf("consume: %s delivered seq %d after %d", r.stream, seq, r.lastSeq)
		}
		if err := r.cons.Received(meta); err != nil {
			return msg{}, true, err
		}
	}
	r.lastSeq, r.lastMsgAt = max(r.lastSeq, seq), time.Now()
	return msg{Msg: m, meta: meta}, false, nil
}

package sink

import (
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errAcksNotInstalled is WithAcks's error for Acks no JetStream reports to.
var errAcksNotInstalled = errors.New("sink: the Acks are not installed on a JetStream: pass their JetStreamOptions to jetstream.New")

// Acks hands the outcome of each asynchronous publish to the lane that
// sent it, on nats.go's acknowledgement goroutine. Without them every
// message in flight has a goroutine of its own waiting on its future:
// started when it is sent and woken when it is acknowledged, which cost
// a start-up snapshot about an eighth of its CPU per item
// (docs/performance.md, "Settings").
//
// One Acks serves any number of Publishers on the JetStream it is
// installed on; publishes it was not told about (a barrier's, the fence's
// reads) are left to their futures.
type Acks struct {
	mu        sync.Mutex
	waiting   map[*nats.Msg]*lane
	installed bool
}

// NewAcks returns Acks to install on a JetStream with JetStreamOptions.
func NewAcks() *Acks { return &Acks{waiting: map[*nats.Msg]*lane{}} }

// JetStreamOptions are the options that make a JetStream report to a: pass
// them to jetstream.New, and a to NewPublisher with WithAcks.
func (a *Acks) JetStreamOptions() []jetstream.JetStreamOpt {
	a.mu.Lock()
	a.installed = true
	a.mu.Unlock()
	return []jetstream.JetStreamOpt{
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, msg *nats.Msg, ack *jetstream.PubAck) { a.settle(msg, ack, nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, msg *nats.Msg, err error) { a.settle(msg, nil, err) }),
	}
}

// settle hands msg's outcome, its acknowledgement or its failure, to the
// lane waiting for it, if any.
func (a *Acks) settle(msg *nats.Msg, ack *jetstream.PubAck, err error) {
	if l := a.take(msg); l != nil {
		l.pub.settled(l, ack, err)
	}
}

// expect makes msg's outcome go to l.
func (a *Acks) expect(msg *nats.Msg, l *lane) {
	a.mu.Lock()
	a.waiting[msg] = l
	a.mu.Unlock()
}

// take returns the lane waiting for msg, once: whoever takes it owns msg's
// outcome. It returns nil for a message no lane waits for.
func (a *Acks) take(msg *nats.Msg) *lane {
	a.mu.Lock()
	l := a.waiting[msg]
	if l != nil {
		delete(a.waiting, msg)
	}
	a.mu.Unlock()
	return l
}

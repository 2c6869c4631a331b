package sink

import (
	"context"
	"reflect"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lane is the FIFO of one subject's parked messages. Whoever settles the
// subject's message in flight takes the next one from it, so a subject
// never has two publishes in flight: a goroutine of the lane's own, or,
// with Acks, the acknowledgement goroutine (see sendRouted).
type lane struct {
	parked []Envelope

	// The fields below serve a lane whose outcomes come through Acks.
	pub     *Publisher
	ctx     context.Context
	subject string
	// inFlight is the message being published and msg its attempt, as
	// sent; msg is nil while no attempt waits for Acks. start is when it
	// was sent. They change under the publisher's mu.
	inFlight Envelope
	msg      *nats.Msg
	start    time.Time
	// stopWatch stops the watch on ctx that gives up the attempt in
	// flight when ctx ends.
	stopWatch func() bool
}

// dispatch hands env on and returns without waiting for its publish, except
// for a barrier, which is published here, when every earlier message has
// settled, so that nothing after it is dispatched before it is stored. It
// fails only when ctx ends before env could be accepted.
func (p *Publisher) dispatch(ctx context.Context, env Envelope) error {
	if env.Barrier {
		return p.barrier(ctx, env)
	}
	held, err := p.acquire(ctx, 1)
	if err != nil {
		p.release(held)
		return err
	}
	p.track(1)
	subject := env.Msg.Subject
	p.mu.Lock()
	if l, busy := p.busy[subject]; busy {
		l.parked = append(l.parked, env)
		p.mu.Unlock()
		return nil
	}
	l := p.newLane()
	l.subject = subject
	p.busy[subject] = l
	p.lanes.Add(1)
	if p.opts.acks != nil {
		l.pub, l.ctx = p, ctx
		l.stopWatch = p.watchLocked(ctx, l)
		p.mu.Unlock()
		p.sendRouted(l, env)
		return nil
	}
	p.mu.Unlock()
	// The first attempt is sent here rather than by the lane: a lane
	// parks on its acknowledgement at once, which lets nats.go's flusher
	// run and write each message on its own, where messages sent one
	// after the other from here are written together
	// (docs/performance.md, "Publishing from the dispatcher").
	var first sent
	if ctx.Err() == nil {
		first = p.send(env)
	}
	go p.runLane(ctx, l, env, first)
	return nil
}

// runLane publishes env, whose first attempt is first if that was made,
// and then, one at a time, the messages parked on its lane, until none
// is left. The lane is removed under the same lock that dispatch parks
// under, so a message parked at the last moment is still picked up here.
func (p *Publisher) runLane(ctx context.Context, l *lane, env Envelope, first sent) {
	for {
		p.publish(ctx, env, first)
		first = sent{}
		p.letGo()
		p.mu.Lock()
		var more bool
		if env, more = p.popLocked(l); !more {
			p.mu.Unlock()
			p.lanes.Done()
			return
		}
		p.mu.Unlock()
	}
}

// sendRouted sends env, the message whose turn it is on l, for Acks to
// settle, without a goroutine waiting for it. A message that cannot be
// sent so, because it failed, the fence refused it or ctx ended, goes to
// a goroutine of the lane's own, as without Acks, with every message
// parked after it: that path retries, resolves conflicts and shuts down.
func (p *Publisher) sendRouted(l *lane, env Envelope) {
	if fence := p.opts.fence; fence != nil {
		if err := fence.admit(); err != nil {
			go p.runLane(l.ctx, l, env, sent{refused: err})
			return
		}
		fence.condition(env.Msg)
	}
	// PublishMsgAsync sets the reply subject on the message it is given;
	// a fresh copy keeps every attempt independent, and names it to Acks.
	msg := &nats.Msg{Subject: env.Msg.Subject, Header: env.Msg.Header, Data: env.Msg.Data}
	acks := p.opts.acks
	p.mu.Lock()
	// abandon holds mu too: either it sees msg here, or msg is not sent.
	if l.ctx.Err() != nil {
		p.mu.Unlock()
		go p.runLane(l.ctx, l, env, sent{})
		return
	}
	start := time.Now()
	l.inFlight, l.msg, l.start = env, msg, start
	acks.expect(msg, l)
	p.mu.Unlock()
	if _, err := p.js.PublishMsgAsync(msg); err != nil {
		// Not sent, so no outcome will come; unless ctx ended meanwhile
		// and abandon took msg, it is still this lane's.
		if acks.take(msg) == nil {
			return
		}
		p.mu.Lock()
		l.inFlight, l.msg = Envelope{}, nil
		p.mu.Unlock()
		go p.runLane(l.ctx, l, env, sent{start: start, err: err})
	}
}

// settled takes the outcome of l's attempt in flight, which Acks handed
// to it, and sends the next message parked on l.
func (p *Publisher) settled(l *lane, ack *jetstream.PubAck, err error) {
	p.mu.Lock()
	env, start := l.inFlight, l.start
	l.inFlight, l.msg = Envelope{}, nil
	p.mu.Unlock()
	if err != nil {
		go p.runLane(l.ctx, l, env, sent{start: start, err: err})
		return
	}
	p.stored(l.ctx, env, ack, start, 1)
	p.letGo()
	p.next(l)
}

// watchLocked arranges for l's attempt in flight to be given up once ctx
// ends. It returns what stops a watch of l's own, or nil when l shares the
// publisher's watch on ctx: a context.AfterFunc per lane cost 0.6 µs and
// three allocations per message of a snapshot, and a publisher's calls
// share one context (the bridge's always do). Call it with mu held.
func (p *Publisher) watchLocked(ctx context.Context, l *lane) func() bool {
	// Only a context that is a pointer (as the context package's
	// cancellable ones are) is shared: comparing a struct can panic, when
	// a field holds a value that cannot be compared. Others get a watch
	// per lane.
	if p.watched == nil && reflect.TypeOf(ctx).Kind() == reflect.Pointer {
		p.watched = ctx
		context.AfterFunc(ctx, p.abandonEnded)
	}
	// p.watched is a pointer, so this cannot panic.
	if p.watched == ctx {
		return nil
	}
	return context.AfterFunc(ctx, func() { p.abandon(l) })
}

// abandonEnded gives up the attempt in flight of every lane whose context
// has ended.
func (p *Publisher) abandonEnded() {
	p.mu.Lock()
	var ended []*lane
	for _, l := range p.busy {
		if l.msg != nil && l.ctx.Err() != nil {
			ended = append(ended, l)
		}
	}
	p.mu.Unlock()
	for _, l := range ended {
		p.abandon(l)
	}
}

// abandon gives up l's attempt in flight, and with it every message
// parked on l, once l's context has ended.
func (p *Publisher) abandon(l *lane) {
	p.mu.Lock()
	env, msg := l.inFlight, l.msg
	// A lane that abandonEnded found may have been settled and reused
	// since, under a context that has not ended.
	if msg == nil || l.ctx.Err() == nil || p.opts.acks.take(msg) == nil {
		p.mu.Unlock()
		return
	}
	l.inFlight, l.msg = Envelope{}, nil
	p.mu.Unlock()
	finish(env, ErrShutdown)
	p.letGo()
	p.next(l)
}

// next sends the message parked first on l, or ends l if none is.
func (p *Publisher) next(l *lane) {
	p.mu.Lock()
	env, more := p.popLocked(l)
	p.mu.Unlock()
	if !more {
		p.lanes.Done()
		return
	}
	p.sendRouted(l, env)
}

// popLocked takes the message parked first on l, or, if none is, removes
// l from its subject and reports false. Call it with mu held.
func (p *Publisher) popLocked(l *lane) (Envelope, bool) {
	if len(l.parked) == 0 {
		delete(p.busy, l.subject)
		// A lane whose own watch on ctx has fired or is firing is not
		// reused: abandon may still be about to look at it. (One that
		// abandonEnded found may be: abandon checks it again.)
		if l.stopWatch == nil || l.stopWatch() {
			p.idle = append(p.idle, l)
		}
		return Envelope{}, false
	}
	env := l.parked[0]
	l.parked[0] = Envelope{} // let the sent message be collected
	l.parked = l.parked[1:]
	return env, true
}

// letGo takes a settled message off the books: its slot in the window
// and its count in InFlight.
func (p *Publisher) letGo() {
	p.track(-1)
	p.release(1)
}

// newLane returns an idle lane or a new one. Call it with mu held.
func (p *Publisher) newLane() *lane {
	n := len(p.idle)
	if n == 0 {
		return &lane{}
	}
	l := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	l.parked = l.parked[:0]
	l.stopWatch = nil
	return l
}

package sink

import "context"

// lane is the FIFO of one subject's parked messages. The goroutine that
// publishes the subject's in-flight message takes the next one from it, so
// a subject never has two publishes in flight.
type lane struct {
	parked []Envelope
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
	p.busy[subject] = p.newLane()
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
	p.lanes.Add(1)
	go func() {
		defer p.lanes.Done()
		p.runLane(ctx, subject, env, first)
	}()
	return nil
}

// runLane publishes env, whose first attempt is first if that was made,
// and then, one at a time, the messages parked on its subject, until none
// is left. The lane is removed under the same lock that
// dispatch parks under, so a message parked at the last moment is still
// picked up here.
func (p *Publisher) runLane(ctx context.Context, subject string, env Envelope, first sent) {
	for {
		p.publish(ctx, env, first)
		first = sent{}
		p.track(-1)
		p.release(1)
		p.mu.Lock()
		l := p.busy[subject]
		if len(l.parked) == 0 {
			delete(p.busy, subject)
			p.idle = append(p.idle, l)
			p.mu.Unlock()
			return
		}
		env = l.parked[0]
		l.parked[0] = Envelope{} // let the sent message be collected
		l.parked = l.parked[1:]
		p.mu.Unlock()
	}
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
	return l
}

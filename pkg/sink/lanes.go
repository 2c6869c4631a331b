package sink

import "context"

// lane is the FIFO of one subject's parked messages. The goroutine that
// publishes the subject's in-flight message takes the next one from it, so
// a subject never has two publishes in flight.
type lane struct {
	parked []Envelope
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
		l := p.lanes[subject]
		if len(l.parked) == 0 {
			delete(p.lanes, subject)
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

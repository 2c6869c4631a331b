package intake

import (
	"context"
	"time"
)

// lingering is the run loop's wait for more changes after a wake-up, while
// changes come at least lingerCompany times per linger
// (BRIDGE_PUBLISH_LINGER). At a steady trickle every change would otherwise
// cross each stage behind the intake alone, waking every goroutine on the
// way (the encoder, the publisher, nats.go's flusher and its acks) once per
// change; taken together, they wake once for all of them. Changes that come
// less often, or the first after a quiet spell, would gather little
// company, so they are taken at once.
type lingering struct {
	// on is set while the run loop lingers; guarded by Intake.mu.
	on bool
	// cut ends a linger early (see cutsLinger).
	cut chan struct{}
	// after is time.After; tests replace it to end a linger when they
	// choose.
	after func(time.Duration) <-chan time.Time
	// gap is a moving average of the time between two live changes, over
	// about the last eight; negative until two have come. last is when
	// the latest came. Both guarded by Intake.mu.
	gap  time.Duration
	last time.Time
}

// lingerCompany is how many changes a linger must be expected to gather
// to be worth its latency. At the benchmark's ~560 changes a second a 20 ms
// linger gathered about 11 and saved 14-23% of the CPU; at 100 a second,
// in bunches of about two, it saved nothing (docs/performance.md).
const lingerCompany = 4

func newLingering() lingering {
	return lingering{cut: make(chan struct{}, 1), after: time.After, gap: -1}
}

// arrived counts a live change that came at now. Call it with Intake.mu
// held.
func (l *lingering) arrived(now time.Time) {
	if !l.last.IsZero() {
		d := max(now.Sub(l.last), 0)
		if l.gap < 0 {
			l.gap = d
		} else {
			l.gap += (d - l.gap) / 8
		}
	}
	l.last = now
}

// changesComeOften reports whether changes have lately come often enough
// for a linger of d to gather lingerCompany of them.
func (in *Intake) changesComeOften(d time.Duration) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.lingering.gap >= 0 && lingerCompany*in.lingering.gap <= d
}

// lingerFor waits d, or until a change cuts it short. It reports false if
// ctx ended first.
func (in *Intake) lingerFor(ctx context.Context, d time.Duration) bool {
	in.mu.Lock()
	in.lingering.on = true
	// A cut left from an earlier linger is not this one's.
	select {
	case <-in.lingering.cut:
	default:
	}
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.lingering.on = false
		in.mu.Unlock()
	}()
	select {
	case <-in.lingering.after(d):
	case <-in.lingering.cut:
	case <-ctx.Done():
		return false
	}
	return true
}

// cutsLinger reports whether p, a change of st's object, is to wait apart
// from the change of the same uid already waiting, and ends the linger if
// so. Changes merge only when publishing is behind (the contract's
// coalescing); while the run loop lingers it is not behind, it is waiting
// for company. So such a change is queued behind the waiting one and the
// linger ends, which hands the first one on: the second then waits for it
// as it would have without a linger. Only an object ready to be taken
// counts: one in flight, or of a type held back, merges as always, so that
// no object's queue grows with the number of lingers. Call it with mu held.
func (in *Intake) cutsLinger(st *objectState, p pending) bool {
	n := len(st.queue)
	if !in.lingering.on || !st.ready || n == 0 || st.queue[n-1].uid != p.uid {
		return false
	}
	in.lingering.on = false
	select {
	case in.lingering.cut <- struct{}{}:
	default:
	}
	return true
}

package intake

import (
	"context"
	"time"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// liveBurst is how many live changes the intake hands on in a row while
// a snapshot waits. Live changes go first, but a snapshot still advances
// when churn never pauses.
const liveBurst = 8

// Work is what the intake hands to the pipeline: a change of an object, or
// a snapshot marker. Every Work of an object is given back, once, to Done
// or Requeue.
type Work struct {
	// Ref is the object; zero for snapshot markers.
	Ref    Ref
	Change informers.Change
	// Truncate publishes the object without its content: JetStream
	// rejected the full form.
	Truncate bool
	// Since is when the oldest live change the work stands for was
	// observed: the start of its lag. Zero for a marker, and for a
	// snapshot item that stands for no live change.
	Since time.Time
	// Listed is, on a snapshot's begin marker, how many objects the cache
	// listed for it: the number of items to come, less those deleted
	// meanwhile.
	Listed int
	// run is the snapshot the work belongs to, if any.
	run *snapshotRun
}

// Next returns the next work to hand on, waiting until there is some or ctx
// ends (then it reports false). Live changes go first; requested
// snapshots advance between them (see liveBurst).
//
// When it had to wait, and changes come often enough that lingering
// gathers several (see changesComeOften), it lingers up to linger after
// the wake-up (see lingerFor); zero never lingers.
func (in *Intake) Next(ctx context.Context, linger time.Duration) (Work, bool) {
	return in.next(ctx, true, linger)
}

// Drain is Next while shutting down: it hands on live changes only,
// starting no snapshot step and never lingering, and reports false once
// nothing waits and nothing is in flight (withheld updates are left: the
// next leader's snapshot publishes their objects), or once ctx ends.
func (in *Intake) Drain(ctx context.Context) (Work, bool) {
	return in.next(ctx, false, 0)
}

func (in *Intake) next(ctx context.Context, snapshots bool, linger time.Duration) (Work, bool) {
	for {
		in.mu.Lock()
		if !snapshots {
			in.draining = true
		}
		w, ok := in.take(snapshots)
		drained := !ok && !snapshots && len(in.objects) == in.parked
		in.mu.Unlock()
		if ok {
			return w, true
		}
		if drained {
			return Work{}, false
		}
		select {
		case <-in.wake:
		case <-ctx.Done():
			return Work{}, false
		}
		if linger > 0 && in.changesComeOften(linger) && !in.lingerFor(ctx, linger) {
			return Work{}, false
		}
	}
}

// take returns the next work, if any, with mu held.
func (in *Intake) take(snapshots bool) (Work, bool) {
	snapshots = snapshots && len(in.runs) > 0
	if !snapshots || in.liveStreak < liveBurst {
		if w, ok := in.takeLive(); ok {
			in.liveStreak++
			return w, true
		}
	}
	if snapshots {
		if w, ok := in.takeSnapshot(); ok {
			in.liveStreak = 0
			return w, true
		}
		if w, ok := in.takeLive(); ok {
			return w, true
		}
	}
	return Work{}, false
}

// takeLive moves the first waiting object to in flight.
func (in *Intake) takeLive() (Work, bool) {
	for {
		ref, ok := in.ready.pop()
		if !ok {
			return Work{}, false
		}
		st := in.objects[ref]
		st.ready = false
		if len(st.queue) == 0 {
			// Not reached: nothing empties a waiting queue. Settled
			// rather than handed on, should that change.
			in.settle(ref, st)
			continue
		}
		p := st.queue[0]
		// Shifted rather than resliced, so the queue keeps its room.
		n := copy(st.queue, st.queue[1:])
		st.queue[n] = pending{}
		st.queue = st.queue[:n]
		st.busy = true
		if p.run != nil {
			p.run.sent()
			st.itemOf = p.run
		}
		return Work{Ref: ref, Change: p.c, run: p.run, Truncate: p.truncate, Since: p.since}, true
	}
}

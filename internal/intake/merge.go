package intake

import (
	"time"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// changes is how many informer changes p stands for.
func (p *pending) changes() int {
	if p.c.Verb == informers.SnapshotItem {
		return p.c.Coalesced
	}
	return max(1, p.c.Coalesced)
}

// merge adds p to what st has waiting. Changes of one uid merge:
//
//	added + updated      → added (newest object)
//	added + deleted      → deleted (not nothing: a snapshot item, read
//	                       from the cache ahead of the handler, may have
//	                       shown the object before its added change came)
//	updated + updated    → updated (first old object, newest object)
//	updated + deleted    → deleted
//	live change + item   → item (a newer snapshot item supersedes it)
//	item + updated       → item (newest object)
//	item + deleted       → deleted
//
// A withheld update (Withhold) merges the same way; what it merges into
// stays as publishable as it was, and a change merged into a withheld one
// makes it publishable. A change of another uid (a delete and re-create
// under one name) is queued behind, so both incarnations are published. merge returns how many live
// changes will not be published as events of their own because of it.
func (in *Intake) merge(st *objectState, p pending) (coalesced int) {
	n := len(st.queue)
	if n == 0 || st.queue[n-1].uid != p.uid {
		in.push(st, p)
		return 0
	}
	last := &st.queue[n-1]
	if last.withheld && !p.withheld {
		// p is the change the withheld one waited for: merged below, it is
		// published, and its lag starts with p, not with the withheld one.
		last.withheld = false
		last.since = p.since
	}
	lv, cv := last.c.Verb, p.c.Verb
	switch {
	case cv == informers.SnapshotItem && lv == informers.Deleted:
		// The cache no longer has a deleted object; nothing to do.
	case cv == informers.SnapshotItem:
		absorbed := last.changes()
		if lv != informers.SnapshotItem {
			// The live change will not be an event of its own.
			coalesced = 1
		}
		if last.run != nil {
			last.run.unqueued()
		}
		p.c.Coalesced = absorbed
		p.truncate = p.truncate || last.truncate
		p.since = oldest(last.since, p.since)
		p.run.queued()
		*last = p
	case lv == informers.SnapshotItem && cv == informers.Deleted:
		last.run.unqueued()
		absorbed := last.c.Coalesced
		p.truncate = p.truncate || last.truncate
		p.since = oldest(last.since, p.since)
		*last = p
		if absorbed > 0 {
			last.c.Coalesced = absorbed + 1
		}
	case lv == informers.SnapshotItem:
		last.c.Object = p.c.Object
		last.c.Coalesced++
		last.since = oldest(last.since, p.since)
		coalesced = 1
	case lv == informers.Deleted:
		// A delete followed by a change of the same uid is not something
		// an informer reports; keep both rather than guess.
		in.push(st, p)
	case cv == informers.Deleted:
		last.c.Coalesced = last.changes() + 1
		last.c.Verb = informers.Deleted
		last.c.Object = p.c.Object
		last.c.OldObject = nil
		last.c.FinalStateUnknown = p.c.FinalStateUnknown
		last.c.ObservedAt = p.c.ObservedAt
		coalesced = 1
	default:
		// added or updated, followed by added or updated: keep the first
		// verb and old object, take the newest object.
		last.c.Coalesced = last.changes() + 1
		last.c.Object = p.c.Object
		last.c.ObservedAt = p.c.ObservedAt
		coalesced = 1
	}
	return coalesced
}

// oldest is the earlier of two observation times; zero is none.
func oldest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// push queues p behind what st has waiting, counting it if it is a
// snapshot item.
func (in *Intake) push(st *objectState, p pending) {
	if p.run != nil {
		p.run.queued()
	}
	st.queue = append(st.queue, p)
}

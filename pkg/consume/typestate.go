package consume

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// typeState is what an Applier holds for one type: the objects, the open
// snapshot, and what the contract checks remember per uid.
type typeState struct {
	f        filter
	indexer  cache.Indexer
	handlers []cache.ResourceEventHandler
	// version is the version of the first event applied.
	version string

	uids map[types.UID]*uidRecord

	// frames holds each shard's snapshot framing: the shards' begins and
	// ends interleave in the stream, each sweeping its own objects.
	frames map[contract.Shard]*frame
	// shards holds the shard of the last event of every object held
	// whose last event named one; an object missing here is the
	// unsharded bridge's. Empty on an unsharded stream.
	shards map[string]contract.Shard
	// begun is set once any begin was applied.
	begun bool
	// scope is what the last begin marker applied says the type is
	// watched for.
	scope Scope
}

// uidRecord is what the checks remember of one object (a uid): the last
// resourceVersion applied, hashes of the event ids applied at it, and
// whether it was deleted. Records of objects no longer held are dropped at
// the first snapshot end after them, so memory follows the objects held.
type uidRecord struct {
	rv      string
	seq     uint64
	ids     []uint64
	deleted bool
	held    bool
}

func newTypeState(f filter, indexer cache.Indexer) *typeState {
	return &typeState{f: f, indexer: indexer, uids: map[types.UID]*uidRecord{}}
}

func (t *typeState) begin(ev *Event) *Violation {
	f := t.frame(ev.Shard)
	if ev.SnapshotID == f.open || ev.SnapshotID == f.lastEnd {
		return &Violation{Kind: DuplicateID, Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID(),
			Detail: fmt.Sprintf("begin marker of snapshot %s again", ev.SnapshotID)}
	}
	// A begin while another snapshot of the shard is open: that one never
	// ended (its bridge stopped in the middle), and ends nothing now.
	f.open, f.begunAt, f.seen, f.begun = ev.SnapshotID, ev.Seq, map[string]struct{}{}, true
	t.begun = true
	t.scope = ev.Scope
	return nil
}

// end applies an end marker. sweep, when not nil, are the objects to
// sweep (the sweep guard chose them); else every candidate is.
func (t *typeState) end(ev *Event, sweep []sweepCandidate, n notifier) *Violation {
	f := t.frame(ev.Shard)
	if ev.SnapshotID != f.open {
		v := &Violation{Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID()}
		switch {
		case ev.SnapshotID == f.lastEnd:
			v.Kind, v.Detail = DuplicateID, fmt.Sprintf("end marker of snapshot %s again", ev.SnapshotID)
		case !f.begun:
			v.Kind, v.Detail = EndSkipped, fmt.Sprintf("end marker of snapshot %s before any begin marker of its type%s: reading started after its begin, or the begin was compacted away", ev.SnapshotID, ofShard(ev.Shard))
		default:
			v.Kind, v.Detail = EndWithoutBegin, fmt.Sprintf("end marker of snapshot %s, but the open snapshot%s is %q", ev.SnapshotID, ofShard(ev.Shard), f.open)
		}
		return v
	}
	if sweep == nil {
		sweep = t.sweepCandidates(ev)
	}
	for _, c := range sweep {
		t.remove(c.obj)
		n.a.stats.Swept++
		n.delete(cache.DeletedFinalStateUnknown{Key: c.key, Obj: c.obj})
	}
	for uid, r := range t.uids {
		if !r.held && r.seq < f.begunAt {
			delete(t.uids, uid)
		}
	}
	f.open, f.seen, f.lastEnd = "", nil, ev.SnapshotID
	n.a.stats.Snapshots++
	return nil
}

// sweepCandidate is an object an end marker sweeps, unless the sweep guard
// keeps it.
type sweepCandidate struct {
	key string
	obj any
}

// sweepCandidates are the objects held that the end marker ev removes:
// those whose last event was of ev's shard, not seen since the shard's
// open snapshot began, and not listed as unpublished. None when ev does
// not end the shard's open snapshot.
func (t *typeState) sweepCandidates(ev *Event) []sweepCandidate {
	f := t.frames[ev.Shard]
	if f == nil || ev.SnapshotID != f.open {
		return nil
	}
	keep := make(map[string]struct{}, len(ev.Unpublished))
	for _, k := range ev.Unpublished {
		keep[k] = struct{}{}
	}
	var out []sweepCandidate
	for _, key := range t.indexer.ListKeys() {
		if _, ok := f.seen[key]; ok {
			continue
		}
		if t.shardOf(key) != ev.Shard {
			// Another shard's object: its own shard's snapshots
			// sweep it.
			continue
		}
		if _, ok := keep[key]; ok {
			continue
		}
		obj, exists, err := t.indexer.GetByKey(key)
		if err != nil || !exists {
			continue
		}
		out = append(out, sweepCandidate{key: key, obj: obj})
	}
	return out
}

// object applies an added, updated, deleted or snapshot item event.
func (t *typeState) object(ev *Event, idHash uint64, n notifier) *Violation {
	if _, err := cache.MetaNamespaceKeyFunc(ev.Object); err != nil {
		// Checked before anything changes: the indexer could not hold it.
		return &Violation{Kind: Undecodable, Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID(),
			Detail: fmt.Sprintf("%s of uid %s: the object has no cache key: %v", ev.Verb, ev.UID, err), Err: err}
	}
	r := t.uids[ev.UID]
	if r != nil {
		if v := r.check(ev, idHash); v != nil {
			return v
		}
	} else {
		r = &uidRecord{}
		t.uids[ev.UID] = r
	}
	r.record(ev, idHash)
	if f := t.frames[ev.Shard]; f != nil && f.seen != nil {
		f.seen[ev.Key()] = struct{}{}
	}
	n.a.stats.Applied++
	old, exists, err := t.indexer.GetByKey(ev.Key())
	if err != nil {
		exists = false
	}
	held := exists && uidOf(old) == ev.UID
	if ev.Verb == Deleted {
		r.deleted = true
		if exists && !held && olderThan(old, ev.ResourceVersion) {
			// The name holds an older object whose delete was not read
			// (the roll-up of a later delete at this name removed it): a
			// newer object existed here since, so the one held is gone.
			t.remove(old)
			n.delete(cache.DeletedFinalStateUnknown{Key: ev.Key(), Obj: old})
			return nil
		}
		if !held {
			n.a.stats.StaleDeletes++
			return nil
		}
		t.remove(old)
		var last any = ev.Object
		if ev.FinalStateUnknown {
			last = cache.DeletedFinalStateUnknown{Key: ev.Key(), Obj: ev.Object}
		}
		n.delete(last)
		return nil
	}
	if exists && !held {
		// The name holds another object: the delete of the one held was
		// not read (compacted or expired) or comes later.
		t.remove(old)
		n.delete(cache.DeletedFinalStateUnknown{Key: ev.Key(), Obj: old})
	}
	if err := t.indexer.Update(ev.Object); err != nil {
		// Unreachable after the key check: the indexer fails on keys only
		// (a failing index function panics in client-go).
		panic(err)
	}
	t.heldBy(ev.Key(), ev.Shard)
	r.held = true
	if held {
		n.update(old, ev.Object)
	} else {
		n.add(ev.Object)
	}
	return nil
}

// remove takes an object out of the indexer; its uid's record stays until
// the next snapshot end.
func (t *typeState) remove(obj any) {
	if err := t.indexer.Delete(obj); err != nil {
		// obj came out of the indexer, so it has a key.
		panic(err)
	}
	if t.shards != nil {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			delete(t.shards, key)
		}
	}
	if r := t.uids[uidOf(obj)]; r != nil {
		r.held = false
	}
}

// check finds what the event breaks: an older resourceVersion than the
// last applied, an id applied before, or a change after the delete that is
// not newer than it. (An object that leaves a type's match is deleted, and
// comes back with a newer resourceVersion when it enters it again: contract
// §12.)
func (r *uidRecord) check(ev *Event, idHash uint64) *Violation {
	v := &Violation{Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID()}
	cmp, err := resourceversion.CompareResourceVersion(ev.ResourceVersion, r.rv)
	switch {
	case err == nil && cmp < 0:
		v.Kind, v.Detail = Regression, fmt.Sprintf("%s of uid %s: resourceVersion %s after %s", ev.Verb, ev.UID, ev.ResourceVersion, r.rv)
	case (err != nil || cmp == 0) && slices.Contains(r.ids, idHash):
		v.Kind, v.Detail = DuplicateID, fmt.Sprintf("%s of uid %s at resourceVersion %s applied before", ev.Verb, ev.UID, ev.ResourceVersion)
	case r.deleted && ev.Verb != Deleted && (err != nil || cmp == 0):
		v.Kind, v.Detail = Regression, fmt.Sprintf("%s of uid %s at resourceVersion %s after its deleted event", ev.Verb, ev.UID, ev.ResourceVersion)
	default:
		return nil
	}
	return v
}

func (r *uidRecord) record(ev *Event, idHash uint64) {
	if r.rv != ev.ResourceVersion {
		r.ids = r.ids[:0]
	}
	if ev.Verb != Deleted {
		// Newer than its delete (checked): the object entered the
		// type's match again.
		r.deleted = false
	}
	r.rv, r.seq = ev.ResourceVersion, ev.Seq
	r.ids = append(r.ids, idHash)
}

// olderThan reports whether obj's resourceVersion is lower than rv.
func olderThan(obj any, rv string) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(m.GetResourceVersion(), rv)
	return err == nil && cmp < 0
}

func uidOf(obj any) types.UID {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetUID()
}

package e2e

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/watch"
)

// What the bridge had to publish of an object, from its history: the
// changes that "reliable" accounts for, grouped in the object's stays in
// scope.

// valChange is one change of an object the bridge had to publish: a
// version in scope, or an exit from the scope (the object's deletion
// while in scope, or the update that took it out, contract §12).
type valChange struct {
	v       int // index in the object's versions
	exit    bool
	episode int // index in the object's episodes
}

// valEpisode is one stay of an object in scope: its changes from the one
// that brought it in to the exit (the last; none when it stayed in scope).
type valEpisode struct {
	first, last int // indexes of changes
	exited      bool
}

// changesOf lists the object's changes and its stays in scope.
func (r *valRun) changesOf(o *valObject) ([]valChange, []valEpisode) {
	var changes []valChange
	var episodes []valEpisode
	in := false
	add := func(vi int, exit bool) {
		if !in {
			episodes = append(episodes, valEpisode{first: len(changes)})
			in = true
		}
		changes = append(changes, valChange{v: vi, exit: exit, episode: len(episodes) - 1})
		episodes[len(episodes)-1].last = len(changes) - 1
		if exit {
			episodes[len(episodes)-1].exited = true
			in = false
		}
	}
	for vi, v := range o.versions {
		scoped := r.inScope(o, vi)
		switch {
		case v.verb == watch.Deleted && scoped:
			// A deletion's object is the last state: in scope, it exits.
			in = true
			add(vi, true)
		case v.verb == watch.Deleted:
			in = false
		case scoped:
			add(vi, false)
		case in:
			add(vi, true) // the update that took it out of scope
		}
	}
	return changes, episodes
}

// rvOf is the resourceVersion of change k.
func rvOf(o *valObject, changes []valChange, k int) string { return o.versions[changes[k].v].rv }

// changeAt maps the resourceVersions of changes to their indexes.
func changeAt(o *valObject, changes []valChange) map[string]int {
	at := make(map[string]int, len(changes))
	for k := range changes {
		at[rvOf(o, changes, k)] = k
	}
	return at
}

// firstChangeAfter is the index of the first change newer than rv.
func firstChangeAfter(o *valObject, changes []valChange, rv string) int {
	return sort.Search(len(changes), func(k int) bool { return cmpRV(rvOf(o, changes, k), rv) > 0 })
}

// describeChange names a change for a violation.
func describeChange(o *valObject, c valChange) string {
	v := o.versions[c.v]
	what := "the version"
	switch {
	case c.exit && v.verb == watch.Deleted:
		what = "the deletion"
	case c.exit:
		what = "the update that took it out of scope"
	}
	return fmt.Sprintf("%s at rv %s (%s)", what, v.rv, v.verb)
}

// reliableTally says how a type's changes reached the stream.
type reliableTally struct {
	changes    int // the bridge had to publish: versions in scope, and exits from it
	own        int // an added, updated or deleted event of their own
	coalesced  int // counted in a later event's coalesced extension
	superseded int // overtaken within a term by a snapshot item, or by a finalstateunknown delete
	handover   int // made while no bridge published, and caught up by the next term
	heldBack   int // still held back at the end: nothing but metadata.resourceVersion changed since the version last published
	unseen     int // of a stay in scope the stream never mentions, which ended (created and deleted while not published)
	relisted   int // made while the bridges could not watch, and missed by their relist
	lost       int // none of these
}

func (t reliableTally) String() string {
	return fmt.Sprintf("%d changes: %d own events, %d coalesced, %d superseded, %d across a handover, %d held back, %d of stays never published, %d missed by a relist, %d lost",
		t.changes, t.own, t.coalesced, t.superseded, t.handover, t.heldBack, t.unseen, t.relisted, t.lost)
}

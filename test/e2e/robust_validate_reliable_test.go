package e2e

import (
	"fmt"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// checkReliable ("reliable") generalises checkLedger to a whole run, with
// scopes, rules and terms: every change the bridge had to publish
// (changesOf: each version in scope, each exit from the scope) is, over
// the admitted messages of its uid,
//
//   - published as its own event: an added, updated or deleted at its
//     resourceVersion; an exit, as a deleted (fsu or not) of that uid;
//   - or counted in a later event's coalesced extension: an event with
//     coalesced n stands for its change and the n-1 before it (contract
//     §4; updates held back merge the same way, §13), and n is no more
//     than the changes since the uid's previous message of that term;
//   - or superseded within a term: the uid's first message at or after it
//     (by resourceVersion; a finalstateunknown delete of the same stay in
//     scope comes after all of them) is a snapshot item or such a delete
//     (§4, §7);
//   - or made during a handover: that first message and the one before it
//     are of different terms, or the uid's first message is of a later
//     term than the first with an item of it (or its end) in that term;
//   - or still held back at the end: no message after it, and its
//     projection differs from the version last published only in
//     metadata.resourceVersion (§11, §13);
//   - or of a stay in scope that ended without any message: created and
//     deleted while nothing published;
//   - or made while the bridges were blind (validateStreamBlind's spans,
//     widened by frameMargin) and followed by a message of its uid: missed
//     by the informer's relist, which shows only the newest version.
//
// An exit is accounted for only by a deleted, a handover, an unseen stay
// or a relist. A change none of these account for is lost; the detail
// keeps the type's tally. Without the blind spans, a change missed in a
// relist looks the same as a lost one: the stream cannot tell them apart.
func (r *valRun) checkReliable() []violation {
	tallies := map[string]*reliableTally{}
	var out []violation
	for _, key := range r.keys {
		o := r.objects[key]
		t := tallies[o.typ]
		if t == nil {
			t = &reliableTally{}
			tallies[o.typ] = t
		}
		out = append(out, r.reliableObject(o, t)...)
	}
	for i := range out {
		out[i].detail += fmt.Sprintf("; %s: %v", out[i].subject, tallies[r.ofType(out[i].subject)])
	}
	return out
}

// reliableTallies is the reliable check's tally per type, for a report.
func reliableTallies(msgs []replay.Message, hist *history, rules map[string]typeRules, blind []blindSpan) map[string]reliableTally {
	run := newValRun(msgs, hist, rules)
	run.blind = blind
	out := map[string]reliableTally{}
	for _, key := range run.keys {
		o := run.objects[key]
		t := out[o.typ]
		run.reliableObject(o, &t)
		out[o.typ] = t
	}
	return out
}

// reliableObject accounts for the changes of one object in t.
func (r *valRun) reliableObject(o *valObject, t *reliableTally) []violation {
	changes, episodes := r.changesOf(o)
	t.changes += len(changes)
	how := make([]*int, len(changes))
	out := r.countEvents(o, changes, how, t)
	for k, c := range changes {
		if how[k] == nil {
			how[k] = r.account(o, changes, episodes, k, t)
		}
		if how[k] == &t.lost {
			out = append(out, violation{check: "reliable", uid: o.uid, subject: r.subject(o), detail: fmt.Sprintf("lost: %s of %s/%s: no event stands for it, nothing accounts for it (%s); %s",
				describeChange(o, c), o.namespace, o.name, r.nextDescribed(o, changes, episodes, k), r.story(o))})
		}
	}
	for _, p := range how {
		*p++
	}
	return out
}

// countEvents marks the changes live events stand for, their own and
// those their coalesced extension counts, and reports counts above the
// changes since the uid's previous message of the same term.
func (r *valRun) countEvents(o *valObject, changes []valChange, how []*int, t *reliableTally) []violation {
	var out []violation
	at := changeAt(o, changes)
	type run struct{ from, to int }
	var runs []run
	for pos, i := range o.msgs {
		m := r.msgs[i]
		j, ok := at[m.Ext(contract.ExtResourceVersion)]
		if !isLiveChange(m) || !ok {
			continue // a version the history lacks is valid's to report
		}
		n, err := m.Coalesced()
		if err != nil {
			out = append(out, r.violation("reliable", i, err.Error()))
			continue
		}
		how[j] = &t.own
		runs = append(runs, run{max(j-n+1, 0), j})
		if pos == 0 || r.info[o.msgs[pos-1]].term != r.info[i].term {
			continue // a new term counts what its own bridge merged
		}
		prev := r.msgs[o.msgs[pos-1]]
		if since := firstChangeAfter(o, changes, prev.Ext(contract.ExtResourceVersion)); n > j-since+1 {
			out = append(out, r.violation("reliable", i, fmt.Sprintf("%s at rv %s: coalesced %d, but %d changes of the object since its previous message (seq %d at rv %s); %s",
				shortType(m), m.Ext(contract.ExtResourceVersion), n, max(j-since+1, 0), prev.Seq, prev.Ext(contract.ExtResourceVersion), r.story(o))))
		}
	}
	for _, c := range runs {
		for x := c.from; x < c.to; x++ {
			if how[x] == nil {
				how[x] = &t.coalesced
			}
		}
	}
	return out
}

// account says how change k, which no live event stands for, reached the
// stream: the tally's counter it goes to.
func (r *valRun) account(o *valObject, changes []valChange, episodes []valEpisode, k int, t *reliableTally) *int {
	c := changes[k]
	ep := episodes[c.episode]
	next := r.nextMessage(o, changes, ep, k)
	switch {
	case ep.exited && !r.mentions(o, changes, ep):
		return &t.unseen
	case next < 0 && !c.exit && r.heldBack(o, c):
		return &t.heldBack
	case next < 0 && c.exit && r.returnedUnseen(o, changes, k):
		return &t.relisted
	case next < 0:
		return &t.lost
	case c.exit && isFinalStateUnknown(r.msgs[o.msgs[next]]):
		return &t.superseded
	case next > 0 && r.info[o.msgs[next]].term != r.info[o.msgs[next-1]].term:
		return &t.handover
	case next == 0 && r.caughtUpByLaterTerm(o):
		return &t.handover
	case !c.exit && (r.msgs[o.msgs[next]].Event.Type() == contract.TypeSnapshotItem || isFinalStateUnknown(r.msgs[o.msgs[next]])):
		return &t.superseded
	case next == 0 && r.beforeTerm(o, c):
		return &t.handover
	case r.madeBlind(o.typ, o.versions[c.v].at):
		return &t.relisted
	}
	return &t.lost
}

// returnedUnseen tells whether exit k and the object's return to scope
// right after it were both made while the bridges were blind, the return
// leaving the object as last published but for its resourceVersion: the
// relist showed the bridge an update of an object in scope that its rules
// do not publish (§11, §13), and never the exit.
func (r *valRun) returnedUnseen(o *valObject, changes []valChange, k int) bool {
	if k+1 >= len(changes) {
		return false
	}
	back := changes[k+1]
	return !back.exit && r.madeBlind(o.typ, o.versions[changes[k].v].at) && r.madeBlind(o.typ, o.versions[back.v].at) && r.heldBack(o, back)
}

// madeBlind tells whether a version of type typ seen at at was made while
// the bridges could not watch that type.
func (r *valRun) madeBlind(typ string, at time.Time) bool {
	for _, f := range r.blind {
		if f.typ != "" && f.typ != typ {
			continue
		}
		if at.After(f.start.Add(-frameMargin)) && (f.end.IsZero() || at.Before(f.end.Add(frameMargin))) {
			return true
		}
	}
	return false
}

// nextMessage is the position (in o.msgs) of the uid's first message at
// or after change k: at its resourceVersion or newer, or a
// finalstateunknown delete of the same stay in scope. -1: none.
func (r *valRun) nextMessage(o *valObject, changes []valChange, ep valEpisode, k int) int {
	rv, start := rvOf(o, changes, k), rvOf(o, changes, ep.first)
	for pos, i := range o.msgs {
		m := r.msgs[i]
		mrv := m.Ext(contract.ExtResourceVersion)
		if cmpRV(mrv, rv) >= 0 || (isFinalStateUnknown(m) && cmpRV(mrv, start) >= 0) {
			return pos
		}
	}
	return -1
}

// mentions tells whether any admitted message of the uid is of a version
// of the stay in scope ep.
func (r *valRun) mentions(o *valObject, changes []valChange, ep valEpisode) bool {
	from, to := rvOf(o, changes, ep.first), rvOf(o, changes, ep.last)
	for _, i := range o.msgs {
		rv := r.msgs[i].Ext(contract.ExtResourceVersion)
		if cmpRV(rv, from) >= 0 && cmpRV(rv, to) <= 0 {
			return true
		}
	}
	return false
}

// caughtUpByLaterTerm tells whether the uid's first message is of a later
// term than its cluster's first, in which an item of it, or its deleted,
// followed: the new leader's start-up snapshot (or scan) covered what
// came before.
func (r *valRun) caughtUpByLaterTerm(o *valObject) bool {
	first := o.msgs[0]
	term := r.info[first].term
	if term == r.firstTerm[r.info[first].key] {
		return false
	}
	for _, i := range o.msgs {
		m := r.msgs[i]
		if r.info[i].term == term && (m.Event.Type() == contract.TypeSnapshotItem || m.Event.Type() == contract.TypeDeleted) {
			return true
		}
	}
	return false
}

// beforeTerm tells whether change c was made before the term of the
// uid's first message began: nothing published while it was made (the
// traffic starts before the first leader; a leader may die before its
// start-up snapshot reaches the object), and the uid's later messages
// carry its state from then on.
func (r *valRun) beforeTerm(o *valObject, c valChange) bool {
	began, ok := r.termBegan[r.info[o.msgs[0]].term]
	return ok && !began.IsZero() && o.versions[c.v].at.Before(began)
}

// heldBack tells whether change c differs from the version the uid's last
// admitted message published only in metadata.resourceVersion: an update
// held back (contract §11) that nothing has carried yet.
func (r *valRun) heldBack(o *valObject, c valChange) bool {
	if len(o.msgs) == 0 {
		return false
	}
	last := r.msgs[o.msgs[len(o.msgs)-1]]
	_, pv, ok := o.version(last.Ext(contract.ExtResourceVersion))
	if !ok || !isUpsert(last) {
		return false
	}
	return sameJSON(withResourceVersion(r.projection(o, pv), ""), withResourceVersion(r.projection(o, c.v), ""))
}

// nextDescribed names the uid's first message after change k for a lost
// change's detail.
func (r *valRun) nextDescribed(o *valObject, changes []valChange, episodes []valEpisode, k int) string {
	next := r.nextMessage(o, changes, episodes[changes[k].episode], k)
	if next < 0 {
		return "no message of the uid comes after it"
	}
	i := o.msgs[next]
	return fmt.Sprintf("the uid's next message: seq %d %s at rv %s of term %d", r.msgs[i].Seq, shortType(r.msgs[i]), r.msgs[i].Ext(contract.ExtResourceVersion), r.info[i].term)
}

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ledgerTally says how the observed changes reached the stream.
type ledgerTally struct {
	changes   int // observed by the test's watch
	own       int // an added, updated or deleted event of their own
	coalesced int // counted in a later event's coalesced extension
	repaired  int // overtaken, within one term, by a snapshot item or a finalstateunknown delete of the object
	handover  int // made while no replica published: a term boundary lies between the object's last message before and its first message after
	unseen    int // of objects created and deleted without ever being published (while no replica published, or within a relist gap)
}

func (t ledgerTally) String() string {
	return fmt.Sprintf("%d changes observed: %d published as their own event, %d counted in a coalesced event, %d overtaken by a snapshot item or a finalstateunknown delete within a term, %d made during a handover and caught up by the next term, %d of objects never published (created and deleted while no replica published, or within a relist gap)",
		t.changes, t.own, t.coalesced, t.repaired, t.handover, t.unseen)
}

// checkLedger fails for every change the test's watch observed that the
// stream neither holds nor accounts for, which is a lost change:
//
//   - An added, updated or deleted event stands for its own change and,
//     with the coalesced extension n, for the n-1 changes of the object
//     before it. Its resourceVersion must be one the apiserver reported
//     for that uid, and n no more than the changes since the object's
//     previous message.
//   - A change no event stands for is accounted for when the object's
//     first message at or after it (by resourceVersion; a finalstateunknown
//     delete comes after every change) is a snapshot item or a
//     finalstateunknown delete: it waited and was overtaken by the
//     snapshot, or was missed and repaired.
//   - Or it was made across a handover: the object's previous message and
//     the first one at or after the change are of different terms; an
//     object whose first message is of a later term than the first must
//     have a snapshot item in that term, or end deleted in it (the new
//     leader's start-up snapshot covered it).
//   - A delete is accounted for by any deleted event of the uid; the
//     changes of a uid the stream never mentions, by its delete (created
//     and deleted while pending, or while no replica published).
//
// So, within one term, a change overtaken by nothing later is lost; the
// check cannot tell a lost change from one a snapshot item superseded.
func checkLedger(t *testing.T, typ string, msgs []replay.Message, changes []observedChange) ledgerTally {
	t.Helper()
	tally := ledgerTally{changes: len(changes)}
	observed := map[string][]observedChange{} // uid → its changes, in order
	var uids []string
	for _, c := range changes {
		if _, ok := observed[c.uid]; !ok {
			uids = append(uids, c.uid)
		}
		observed[c.uid] = append(observed[c.uid], c)
	}
	stream := map[string][]replay.Message{} // uid → its messages, in order
	firstTerm := uint64(0)
	itemTerms := map[string]map[uint64]bool{} // uid → terms with a snapshot item of it
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeTerm && firstTerm == 0 {
			firstTerm = m.Seq
		}
		if !strings.HasPrefix(m.Subject, typ+".") || m.Ext(contract.ExtUID) == "" {
			continue
		}
		uid := m.Ext(contract.ExtUID)
		stream[uid] = append(stream[uid], m)
		if m.Event.Type() == contract.TypeSnapshotItem {
			if itemTerms[uid] == nil {
				itemTerms[uid] = map[uint64]bool{}
			}
			itemTerms[uid][termOf(m)] = true
		}
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, uid := range uids {
		obs, ms := observed[uid], stream[uid]
		last := obs[len(obs)-1]
		if len(ms) == 0 {
			if last.verb != watch.Deleted {
				problem("uid %s (%s): %d changes, none in the stream, and it exists", uid, last.name, len(obs))
			}
			tally.unseen += len(obs)
			continue
		}
		index := map[string]int{}
		for i, c := range obs {
			index[c.rv] = i
		}
		how := make([]*int, len(obs))
		deleted := false
		for i, m := range ms {
			if m.Event.Type() == contract.TypeDeleted {
				deleted = true
			}
			if !isLiveChange(m) {
				continue
			}
			j, ok := index[m.Ext(contract.ExtResourceVersion)]
			if !ok {
				problem("seq %d %s %s uid %s: rv %s is no change the apiserver reported for that uid", m.Seq, m.Event.Type(), m.Subject, uid, m.Ext(contract.ExtResourceVersion))
				continue
			}
			n, err := m.Coalesced()
			if err != nil {
				problem("seq %d: %v", m.Seq, err)
				continue
			}
			since := 0
			if i > 0 {
				if k, ok := index[ms[i-1].Ext(contract.ExtResourceVersion)]; ok {
					since = k + 1
				}
			}
			if n > j-since+1 {
				problem("seq %d %s %s: coalesced %d, but %d changes of uid %s since its previous message", m.Seq, m.Event.Type(), m.Subject, n, j-since+1, uid)
			}
			for x := max(j-n+1, 0); x <= j; x++ {
				if x == j {
					how[x] = &tally.own
				} else {
					how[x] = &tally.coalesced
				}
			}
		}
		for k, c := range obs {
			if how[k] != nil {
				continue
			}
			if c.verb == watch.Deleted && deleted {
				how[k] = &tally.repaired
				continue
			}
			next := -1
			for i, m := range ms {
				if isFinalStateUnknown(m) || cmpRV(m.Ext(contract.ExtResourceVersion), c.rv) >= 0 {
					next = i
					break
				}
			}
			switch {
			case next < 0:
			case ms[next].Event.Type() == contract.TypeSnapshotItem || isFinalStateUnknown(ms[next]):
				if next > 0 && termOf(ms[next]) != termOf(ms[next-1]) {
					how[k] = &tally.handover
				} else {
					how[k] = &tally.repaired
				}
			case next > 0 && termOf(ms[next]) != termOf(ms[next-1]):
				how[k] = &tally.handover
			case next == 0 && termOf(ms[0]) != firstTerm &&
				(itemTerms[uid][termOf(ms[0])] || (ms[len(ms)-1].Event.Type() == contract.TypeDeleted && termOf(ms[len(ms)-1]) == termOf(ms[0]))):
				how[k] = &tally.handover
			}
			if how[k] == nil {
				problem("lost: %s of %s (uid %s) at rv %s: no event stands for it, and nothing overtook it (the uid's messages: %s)", c.verb, c.name, uid, c.rv, describeBrief(ms))
			}
		}
		for _, p := range how {
			if p != nil {
				*p++
			}
		}
	}
	for uid, ms := range stream {
		if _, ok := observed[uid]; !ok {
			problem("uid %s: %d messages (%s), but the apiserver reported no change of it", uid, len(ms), ms[0].Subject)
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		n := len(problems)
		if n > 20 {
			problems = append(problems[:20], "...")
		}
		t.Errorf("%d changes the apiserver made are not accounted for in the stream (%v):\n    %s", n, tally, strings.Join(problems, "\n    "))
	}
	if sum := tally.own + tally.coalesced + tally.repaired + tally.handover + tally.unseen; sum > tally.changes {
		t.Errorf("the ledger accounts for %d changes, more than the %d observed", sum, tally.changes)
	}
	return tally
}

func isLiveChange(m replay.Message) bool {
	switch m.Event.Type() {
	case contract.TypeAdded, contract.TypeUpdated:
		return true
	case contract.TypeDeleted:
		return !isFinalStateUnknown(m)
	}
	return false
}

func isFinalStateUnknown(m replay.Message) bool {
	return m.Event.Type() == contract.TypeDeleted && m.Ext(contract.ExtFinalStateUnknown) == "true"
}

// termOf is the term a message was published in (0: none).
func termOf(m replay.Message) uint64 {
	if m.Event.Type() == contract.TypeTerm {
		return m.Seq
	}
	t, _ := contract.TermOf(m.Header)
	return t
}

// cmpRV compares resourceVersions; unparsable ones compare as equal.
func cmpRV(a, b string) int {
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return 0
	}
	return c
}

// describeBrief lists messages on one line.
func describeBrief(msgs []replay.Message) string {
	var parts []string
	for _, m := range msgs {
		s := fmt.Sprintf("seq %d %s rv %s term %d", m.Seq, strings.TrimPrefix(m.Event.Type(), "io.kubebridge."), m.Ext(contract.ExtResourceVersion), termOf(m))
		if n, ok := m.Event.Extensions()[replay.ExtCoalesced]; ok {
			s += fmt.Sprintf(" coalesced %v", n)
		}
		if isFinalStateUnknown(m) {
			s += " finalstateunknown"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

package e2e

import (
	"fmt"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// checkOrdered ("ordered"): per object (a uid of a type), over the
// messages the term rule admits (contract §3), in stream order:
//
//   - the resourceVersions of its live events (added, updated, deleted
//     that is no finalstateunknown) strictly increase, but for a new
//     term's copy of the change the deposed term published last, which may
//     carry the same one (§3: a new leader's copy gets a new id);
//   - no message, snapshot items and finalstateunknown deletes included,
//     goes below the highest resourceVersion admitted before it (§7,
//     invariant 1);
//   - after a deleted, an upsert comes back only at a newer
//     resourceVersion than the delete's: the object entered the scope
//     again (§12).
func (r *valRun) checkOrdered() []violation {
	var out []violation
	for _, key := range r.keys {
		o := r.objects[key]
		var seen orderSeen
		for _, i := range o.msgs {
			if problem := seen.next(r.msgs[i], r.info[i].term); problem != "" {
				out = append(out, r.violation("ordered", i, fmt.Sprintf("%s in term %d: %s; %s", shortType(r.msgs[i]), r.info[i].term, problem, r.story(o))))
			}
		}
	}
	return out
}

// orderSeen is what checkOrdered remembers of an object's messages.
type orderSeen struct {
	highest, lastLive, deletedAt string
	lastLiveTerm                 uint64
}

// next takes the object's next admitted message, of term; it returns
// what is out of order about it, "" when nothing.
func (s *orderSeen) next(m replay.Message, term uint64) string {
	rv := m.Ext(contract.ExtResourceVersion)
	var problem string
	switch {
	case s.highest != "" && cmpRV(rv, s.highest) < 0:
		problem = fmt.Sprintf("rv %s below rv %s, admitted before for the object", rv, s.highest)
	case isLiveChange(m) && s.lastLive != "" && (cmpRV(rv, s.lastLive) < 0 || (cmpRV(rv, s.lastLive) == 0 && term == s.lastLiveTerm)):
		problem = fmt.Sprintf("a live event at rv %s after the live event at rv %s of term %d", rv, s.lastLive, s.lastLiveTerm)
	case isUpsert(m) && s.deletedAt != "" && cmpRV(rv, s.deletedAt) <= 0:
		problem = fmt.Sprintf("the object at rv %s after its deleted at rv %s: a uid comes back only newer (contract §12)", rv, s.deletedAt)
	}
	if s.highest == "" || cmpRV(rv, s.highest) > 0 {
		s.highest = rv
	}
	if isLiveChange(m) {
		s.lastLive, s.lastLiveTerm = rv, term
	}
	switch {
	case m.Event.Type() == contract.TypeDeleted:
		s.deletedAt = rv
	case s.deletedAt != "" && cmpRV(rv, s.deletedAt) > 0:
		s.deletedAt = ""
	}
	return problem
}

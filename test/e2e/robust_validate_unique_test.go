package e2e

import (
	"fmt"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// checkUnique ("unique"), over every message of the stream:
//
//   - no CloudEvents id (with its source) is stored twice: a retry is a
//     duplicate JetStream drops, and a new term's copy of a change gets a
//     new id (contract §1, §3);
//   - on every subject, once a message of term T of a cluster and shard is
//     stored, no later message of a lower term of that cluster and shard
//     is: the fence refuses it (§3, guarantee 1). A deposed leader's late
//     message on a subject the new term has not written yet is allowed
//     (guarantee 2); consumers skip it by the term rule.
func (r *valRun) checkUnique() []violation {
	var out []violation
	ids := map[string]uint64{}                     // source and id → the seq that has it
	terms := map[string]map[string]termOnSubject{} // subject → cluster and shard → its newest term there
	for i, m := range r.msgs {
		id := m.Event.Source() + " " + m.Event.ID()
		if first, ok := ids[id]; ok {
			out = append(out, r.violation("unique", i, fmt.Sprintf("%s: id %s stored before at seq %d", shortType(m), m.Event.ID(), first)))
		} else {
			ids[id] = m.Seq
		}
		info := r.info[i]
		if m.Event.Type() == contract.TypeTerm || info.foreign || m.Header.Get(contract.TermHeader) == "" {
			continue
		}
		bySubject := terms[m.Subject]
		if bySubject == nil {
			bySubject = map[string]termOnSubject{}
			terms[m.Subject] = bySubject
		}
		newest := bySubject[info.key]
		if info.term < newest.term {
			out = append(out, r.violation("unique", i, fmt.Sprintf("%s of term %d stored on its subject after seq %d of term %d: the fence lets no older term write a subject a newer one wrote (contract §3); %s",
				shortType(m), info.term, newest.seq, newest.term, r.storyOfMessage(i))))
			continue
		}
		bySubject[info.key] = termOnSubject{term: info.term, seq: m.Seq}
	}
	return out
}

// termOnSubject is the newest term stored on a subject, and where.
type termOnSubject struct {
	term, seq uint64
}

// storyOfMessage is the story of the object message i is about, or
// nothing for a marker.
func (r *valRun) storyOfMessage(i int) string {
	if !isObjectMessage(r.msgs[i]) {
		return "a marker"
	}
	return r.story(r.objectOf(i))
}

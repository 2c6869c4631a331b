package e2e

import (
	"fmt"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// checkOldObjects ("oldObjects"): each admitted updated event's oldObject
// is the object of the previous admitted message of its uid, event or
// snapshot item, at the same resourceVersion and with the same content
// (contract §5, §13): the version the stream last published, also when
// the update stands for several changes (coalesced, or merged with
// updates held back) — the version before the run it stands for. A
// bridge that took over publishes from its own cache and cannot know what
// its predecessor published last: the first update of a uid in a new
// term need only carry an older version than its object. A truncated
// update's oldObject is compared in its truncated form; it may be absent.
func (r *valRun) checkOldObjects() []violation {
	var out []violation
	for _, key := range r.keys {
		o := r.objects[key]
		prev := -1
		for _, i := range o.msgs {
			m := r.msgs[i]
			if m.Event.Type() == contract.TypeUpdated {
				if problem := r.oldObjectProblem(i, prev); problem != "" {
					out = append(out, r.violation("oldObjects", i, fmt.Sprintf("%s at rv %s in term %d: %s; %s",
						shortType(m), m.Ext(contract.ExtResourceVersion), r.info[i].term, problem, r.story(o))))
				}
			}
			prev = i
		}
	}
	return out
}

// oldObjectProblem is what is wrong with the oldObject of update i, whose
// uid's previous admitted message is prev (-1: none); "" when nothing.
func (r *valRun) oldObjectProblem(i, prev int) string {
	m := r.msgs[i]
	d, err := dataOf(m)
	switch {
	case err != nil:
		return "its data does not decode: " + err.Error()
	case !d.hasOld && isTruncated(m):
		return ""
	case !d.hasOld:
		return "no oldObject"
	case prev < 0:
		return ""
	}
	oldRV := resourceVersionOf(d.oldObject)
	if r.info[prev].term != r.info[i].term {
		if cmpRV(oldRV, m.Ext(contract.ExtResourceVersion)) >= 0 {
			return fmt.Sprintf("its oldObject is at rv %s, not older than its object", oldRV)
		}
		return ""
	}
	p := r.msgs[prev]
	if p.Event.Type() == contract.TypeDeleted {
		return fmt.Sprintf("an update right after the deleted (seq %d) of its uid", p.Seq)
	}
	pd, err := dataOf(p)
	if err != nil {
		return fmt.Sprintf("the previous message (seq %d) does not decode: %v", p.Seq, err)
	}
	want, got := pd.object, d.oldObject
	if isTruncated(m) || isTruncated(p) {
		want, got = truncatedForm(want), truncatedForm(got)
	}
	if prevRV := p.Ext(contract.ExtResourceVersion); oldRV != prevRV {
		return fmt.Sprintf("its oldObject is at rv %s, but the version published before it (seq %d %s) is at rv %s", oldRV, p.Seq, shortType(p), prevRV)
	}
	if !sameJSON(want, got) {
		return fmt.Sprintf("its oldObject differs from the object the previous message (seq %d) published: %s", p.Seq, jsonDiff(want, got))
	}
	return ""
}

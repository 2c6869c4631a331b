package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// checkValid ("valid"): every object message of a type the run watches,
// admitted or not, carries a version (uid and resourceVersion) the
// apiserver made, as the type's rules project it (contract §5, §11), and
// so does an update's oldObject. A truncated object is the version's
// identifying metadata (§1). An added, updated or item is of a version in
// scope; a deleted that is no finalstateunknown is at the object's
// deletion or at the update that took it out of scope (§12); a
// finalstateunknown one is at a version in scope, unless it restates a
// deposed leader's delete (restatesDeposed). A message
// whose term no term marker backs is no bridge's (§3).
func (r *valRun) checkValid() []violation {
	var out []violation
	for i, m := range r.msgs {
		info := r.info[i]
		switch {
		case info.typ == "":
		case info.foreign:
			out = append(out, r.violation("valid", i, fmt.Sprintf("%s with term %d, which no term marker of %s backs: a foreign message (contract §3)", shortType(m), info.term, info.key)))
		case isObjectMessage(m):
			if problem := r.validObject(i); problem != "" {
				out = append(out, r.violation("valid", i, fmt.Sprintf("%s at rv %s: %s; %s", shortType(m), m.Ext(contract.ExtResourceVersion), problem, r.story(r.objectOf(i)))))
			}
		}
	}
	return out
}

// validObject is what is wrong with object message i, "" when nothing.
func (r *valRun) validObject(i int) string {
	m := r.msgs[i]
	o := r.objectOf(i)
	if o == nil || len(o.versions) == 0 {
		return "the apiserver made no object of uid " + m.Ext(contract.ExtUID)
	}
	_, vi, ok := o.version(m.Ext(contract.ExtResourceVersion))
	if !ok {
		return "the apiserver made no such version of the object"
	}
	d, err := dataOf(m)
	if err != nil {
		return "its data does not decode: " + err.Error()
	}
	if problem := r.validScope(m, o, vi); problem != "" && !r.restatesDeposed(i) {
		return problem
	}
	if problem := r.validContent(m, o, vi, d.object); problem != "" {
		return problem
	}
	if m.Event.Type() == contract.TypeUpdated && d.hasOld {
		return r.validOld(m, o, d.oldObject)
	}
	return ""
}

// restatesDeposed reports whether message i is a finalstateunknown delete
// that the start-up scan published for a delete a deposed leader stored,
// which consumers ignore (contract §3): it carries that delete's version
// (a deletion, or the update that left the scope), the last state the
// stream held.
func (r *valRun) restatesDeposed(i int) bool {
	m := r.msgs[i]
	if !isFinalStateUnknown(m) {
		return false
	}
	for j := i - 1; j >= 0; j-- {
		p := r.msgs[j]
		if p.Subject != m.Subject || p.Ext(contract.ExtUID) != m.Ext(contract.ExtUID) {
			continue
		}
		return !r.info[j].admitted && p.Event.Type() == contract.TypeDeleted && p.Ext(contract.ExtResourceVersion) == m.Ext(contract.ExtResourceVersion)
	}
	return false
}

// validScope says what is wrong with the version a message carries for
// its type of message.
func (r *valRun) validScope(m replay.Message, o *valObject, vi int) string {
	v := o.versions[vi]
	deleted := v.verb == watch.Deleted
	switch {
	case isFinalStateUnknown(m) && (deleted || !r.inScope(o, vi)):
		return "a finalstateunknown delete carries the last state the bridge had, but this version is a deletion or out of scope"
	case m.Event.Type() != contract.TypeDeleted && deleted:
		return "an object published at its deletion's resourceVersion"
	case m.Event.Type() != contract.TypeDeleted && !r.inScope(o, vi):
		return "published at a version out of the bridge's scope"
	case !isLiveChange(m) || m.Event.Type() != contract.TypeDeleted:
	case deleted && !r.inScope(o, vi):
		return "a deleted event of an object that was out of scope when it was deleted"
	case !deleted && r.inScope(o, vi):
		return "a deleted event at a version where the object exists in scope (neither its deletion nor a leave of the scope)"
	case !deleted && (vi == 0 || !r.inScope(o, vi-1)):
		return "a deleted event at a version out of scope that left nothing: the version before it was not in scope"
	}
	return ""
}

// validContent says how the object a message carries differs from the
// version's projection.
func (r *valRun) validContent(m replay.Message, o *valObject, vi int, got any) string {
	want := r.projection(o, vi)
	switch {
	case isTruncated(m):
		want = truncatedForm(want)
	case isFinalStateUnknown(m) && sameJSON(got, truncatedForm(want)):
		// The start-up scan's delete of an object whose last message was
		// truncated carries that message's object.
		return ""
	case isLiveChange(m) && m.Event.Type() == contract.TypeDeleted && o.versions[vi].verb != watch.Deleted && vi > 0 &&
		sameJSON(got, withResourceVersion(r.projection(o, vi-1), o.versions[vi].rv)):
		// A watch with a label selector reports an object leaving it as
		// deleted with its previous content at the update's
		// resourceVersion (the apiserver's cacher and etcd watcher both do).
		return ""
	}
	if sameJSON(got, want) {
		return ""
	}
	return "its object differs from the version's projection: " + jsonDiff(want, got)
}

// validOld says what is wrong with an update's oldObject.
func (r *valRun) validOld(m replay.Message, o *valObject, old any) string {
	_, vi, ok := o.version(resourceVersionOf(old))
	if !ok {
		return fmt.Sprintf("its oldObject is at rv %q, no version of the object", resourceVersionOf(old))
	}
	want := r.projection(o, vi)
	if isTruncated(m) {
		want = truncatedForm(want)
	}
	if !sameJSON(old, want) {
		return "its oldObject differs from the projection of version " + o.versions[vi].rv + ": " + jsonDiff(want, old)
	}
	return ""
}

// shortType is a message's type without the contract's prefix, with
// finalstateunknown, coalesced and truncated as they apply.
func shortType(m replay.Message) string {
	s := strings.TrimPrefix(strings.TrimPrefix(m.Event.Type(), "io.kubebridge."), "object.")
	if isFinalStateUnknown(m) {
		s += " (finalstateunknown)"
	}
	if isTruncated(m) {
		s += " (truncated)"
	}
	if n, ok := m.Event.Extensions()[replay.ExtCoalesced]; ok {
		s += fmt.Sprintf(" (coalesced %v)", n)
	}
	return s
}

// jsonDiff names the first paths where two JSON values differ, briefly.
func jsonDiff(want, got any) string {
	var diffs []string
	diffJSON("", want, got, &diffs)
	if len(diffs) > 4 {
		diffs = append(diffs[:4], "…")
	}
	return strings.Join(diffs, ", ")
}

func diffJSON(path string, want, got any, diffs *[]string) {
	w, wok := want.(map[string]any)
	g, gok := got.(map[string]any)
	if !wok || !gok {
		if !sameJSON(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", orElse(path, "/"), clip(want), clip(got)))
		}
		return
	}
	for _, k := range sortedUnion(w, g) {
		diffJSON(path+"/"+k, w[k], g[k], diffs)
	}
}

func sortedUnion(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// clip is a JSON value in at most 60 characters.
func clip(v any) string {
	if v == nil {
		return "nothing"
	}
	s := fmt.Sprint(v)
	if b, err := json.Marshal(v); err == nil {
		s = string(b)
	}
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return s
}

func orElse(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

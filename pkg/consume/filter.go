package consume

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ErrBadFilter is wrapped by every error about a Filter.
var ErrBadFilter = errors.New("consume: bad filter")

// Filter selects the events of one resource type, optionally of one
// namespace and one name.
type Filter struct {
	// Resource names the type the way kubectl accepts it, by its plural
	// resource name and group: "configmaps", "deployments.apps",
	// "widgets.example.com". Without a version every version the bridge
	// publishes matches; "resource.version.group" ("configmaps.v1",
	// "horizontalpodautoscalers.v2.autoscaling") pins one. Short names and
	// kinds ("cm", "ConfigMap") need discovery and are not accepted.
	Resource string
	// Namespace restricts the filter to one namespace; empty matches all
	// namespaces and cluster-scoped objects.
	Namespace string
	// Name restricts the filter to objects of this name.
	Name string
}

// String is the filter as the user wrote it, for messages.
func (f Filter) String() string {
	s := f.Resource
	if f.Namespace != "" {
		s += " in " + f.Namespace
	}
	if f.Name != "" {
		s += " named " + f.Name
	}
	return s
}

// parseResource reads Filter.Resource.
func parseResource(s string) (contract.Type, error) {
	t, err := contract.ParseTypeName(s)
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrBadFilter, err)
	}
	return t, nil
}

// typeOf is the contract's name of a type.
func typeOf(gvr schema.GroupVersionResource) contract.Type {
	return contract.Type{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
}

// filter is a parsed Filter.
type filter struct {
	Filter
	ref contract.Type
}

func parseFilter(f Filter) (filter, error) {
	ref, err := parseResource(f.Resource)
	if err != nil {
		return filter{}, err
	}
	return filter{Filter: f, ref: ref}, nil
}

func parseFilters(fs []Filter) ([]filter, error) {
	if len(fs) == 0 {
		return nil, fmt.Errorf("%w: no filter", ErrBadFilter)
	}
	out := make([]filter, len(fs))
	for i, f := range fs {
		p, err := parseFilter(f)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// typeSubject is the subject prefix of the filter's type, with * for an
// unpinned version.
func (f filter) typeSubject(s contract.Subjects) string {
	return s.Type(f.ref)
}

// wholeType reports whether the filter selects the whole type, snapshot
// markers included.
func (f filter) wholeType() bool { return f.Namespace == "" && f.Name == "" }

// objectSubject is the subject filter of the filter's objects.
func (f filter) objectSubject(s contract.Subjects) string {
	ns, name := "*", "*"
	if f.Namespace != "" {
		ns = contract.EscapeToken(f.Namespace)
	}
	if f.Name != "" {
		name = contract.EscapeToken(f.Name)
	}
	return f.typeSubject(s) + "." + ns + "." + name
}

// eventSubjects are the subject filters of the filter's events: the whole
// type, or only the objects it names.
func (f filter) eventSubjects(s contract.Subjects) []string {
	if f.wholeType() {
		return []string{f.typeSubject(s) + ".>"}
	}
	return []string{f.objectSubject(s)}
}

// stateSubjects are the subject filters a State needs: the objects plus
// the type's snapshot markers, which frame every namespace.
func (f filter) stateSubjects(s contract.Subjects) []string {
	if f.wholeType() {
		return []string{f.typeSubject(s) + ".>"}
	}
	return []string{f.objectSubject(s), s.Markers(f.ref)}
}

// matches reports whether a decoded event falls under the filter: its type,
// and for an object its namespace and name. Snapshot markers match only a
// filter of the whole type: subject wildcards over-select, and
// "<type>.*.begin" (objects named begin) also matches a marker.
func (f filter) matches(ev *Event) bool {
	if !f.ref.Covers(typeOf(ev.Resource)) {
		return false
	}
	if ev.Verb.IsMarker() {
		return f.wholeType()
	}
	return (f.Namespace == "" || f.Namespace == ev.Namespace) && (f.Name == "" || f.Name == ev.Name)
}

// dedupe drops repeated subject filters, which JetStream refuses as
// overlapping.
func dedupe(subjects []string) []string {
	seen := map[string]bool{}
	out := subjects[:0:0]
	for _, s := range subjects {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

package consume

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubebridge/kubebridge/pkg/encode"
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

// typeRef is a parsed Filter.Resource: the API group ("" for core), the
// version ("" for any) and the plural resource name.
type typeRef struct {
	Group, Version, Resource string
}

func (r typeRef) String() string {
	s := r.Resource
	if r.Version != "" {
		s += "." + r.Version
	}
	if r.Group != "" {
		s += "." + r.Group
	}
	return s
}

// covers reports whether r selects the type group/version/resource.
func (r typeRef) covers(group, version, resource string) bool {
	return r.Group == group && r.Resource == resource && (r.Version == "" || r.Version == version)
}

// versionRE matches Kubernetes API versions: v1, v2beta1, v1alpha3.
var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// parseResource splits a kubectl-style resource name. The second token is
// taken as a version when it looks like one: no API group is named like a
// version, and "configmaps.v1" is how the bridge names core types in ids.
func parseResource(s string) (typeRef, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return typeRef{}, fmt.Errorf("%w: no resource", ErrBadFilter)
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "*> \t") {
			return typeRef{}, fmt.Errorf("%w: %q is not resource[.version][.group]", ErrBadFilter, s)
		}
	}
	r := typeRef{Resource: parts[0]}
	rest := parts[1:]
	if len(rest) > 0 && versionRE.MatchString(rest[0]) {
		r.Version, rest = rest[0], rest[1:]
	}
	r.Group = strings.Join(rest, ".")
	return r, nil
}

// filter is a parsed Filter.
type filter struct {
	Filter
	ref typeRef
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
func (f filter) typeSubject(s encode.Subjects) string {
	return s.TypeOf(f.ref.Group, f.ref.Version, f.ref.Resource)
}

// wholeType reports whether the filter selects the whole type, snapshot
// markers included.
func (f filter) wholeType() bool { return f.Namespace == "" && f.Name == "" }

// objectSubject is the subject filter of the filter's objects.
func (f filter) objectSubject(s encode.Subjects) string {
	ns, name := "*", "*"
	if f.Namespace != "" {
		ns = encode.EscapeToken(f.Namespace)
	}
	if f.Name != "" {
		name = encode.EscapeToken(f.Name)
	}
	return f.typeSubject(s) + "." + ns + "." + name
}

// eventSubjects are the subject filters of the filter's events: the whole
// type, or only the objects it names.
func (f filter) eventSubjects(s encode.Subjects) []string {
	if f.wholeType() {
		return []string{f.typeSubject(s) + ".>"}
	}
	return []string{f.objectSubject(s)}
}

// stateSubjects are the subject filters a State needs: the objects plus
// the type's snapshot markers, which frame every namespace.
func (f filter) stateSubjects(s encode.Subjects) []string {
	if f.wholeType() {
		return []string{f.typeSubject(s) + ".>"}
	}
	return []string{f.objectSubject(s), f.typeSubject(s) + "." + encode.SnapshotToken + ".*"}
}

// matches reports whether a decoded event falls under the filter: its type,
// and for an object its namespace and name. Snapshot markers match only a
// filter of the whole type: subject wildcards over-select, and
// "<type>.*.begin" (objects named begin) also matches a marker.
func (f filter) matches(ev *Event) bool {
	if !f.ref.covers(ev.Resource.Group, ev.Resource.Version, ev.Resource.Resource) {
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

package contract

import (
	"errors"
	"strconv"
	"strings"
)

// ErrBadTypeName is returned by ParseTypeName.
var ErrBadTypeName = errors.New("contract: not resource[.version][.group]")

// String names the type as kubectl does: resource[.version][.group], the
// version left out when empty.
func (t Type) String() string {
	s := t.Resource
	if t.Version != "" {
		s += "." + t.Version
	}
	if t.Group != "" {
		s += "." + t.Group
	}
	return s
}

// Covers reports whether t selects u: the same group and resource, at any
// version when t has none.
func (t Type) Covers(u Type) bool {
	return t.Group == u.Group && t.Resource == u.Resource && (t.Version == "" || t.Version == u.Version)
}

// ParseTypeName reads a type named the way kubectl accepts it by its plural
// resource name: "configmaps", "deployments.apps", "configmaps.v1",
// "horizontalpodautoscalers.v2.autoscaling". The second token is taken as
// a version when it looks like one: no API group is named like a version,
// and "configmaps.v1" is how the bridge names core types in ids.
func ParseTypeName(s string) (Type, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return Type{}, &wrapped{ErrBadTypeName.Error() + ": empty", ErrBadTypeName}
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "*> \t") {
			return Type{}, &wrapped{"contract: " + strconv.Quote(s) + " is not resource[.version][.group]", ErrBadTypeName}
		}
	}
	t := Type{Resource: parts[0]}
	rest := parts[1:]
	if len(rest) > 0 && IsVersion(rest[0]) {
		t.Version, rest = rest[0], rest[1:]
	}
	t.Group = strings.Join(rest, ".")
	return t, nil
}

// IsVersion reports whether s is a Kubernetes API version: v1, v2beta1,
// v1alpha3.
func IsVersion(s string) bool {
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return false
	}
	major := leadingDigits(rest)
	if major == 0 {
		return false
	}
	rest = rest[major:]
	if rest == "" {
		return true
	}
	for _, stage := range []string{"alpha", "beta"} {
		if r, ok := strings.CutPrefix(rest, stage); ok {
			return r != "" && leadingDigits(r) == len(r)
		}
	}
	return false
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

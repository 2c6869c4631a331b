package encode

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Tokens with a fixed meaning. A leading underscore decodes to a leading
// dot, which no namespace, group or version can start with, so these never
// collide with an escaped Kubernetes name.
const (
	// CoreGroupToken stands for the legacy core API group ("").
	CoreGroupToken = "core"
	// namedCoreGroupToken stands for an API group named "core" (an
	// aggregated API may serve one): its first letter escaped, a form
	// EscapeToken never writes, so it cannot meet the legacy group's.
	namedCoreGroupToken = "%63ore"
	// ClusterScopeToken takes the namespace position for cluster-scoped objects.
	ClusterScopeToken = "_cluster"
	// SnapshotToken takes the namespace position in snapshot marker subjects.
	SnapshotToken = "_snapshot"
	// emptyToken stands for the empty string, which NATS cannot carry as a token.
	emptyToken = "%"
)

// ErrBadToken is returned when a subject token is not one EscapeToken made.
var ErrBadToken = errors.New("encode: malformed subject token")

const hexDigits = "0123456789ABCDEF"

// EscapeToken turns any string into one NATS subject token, reversibly:
// ASCII letters, digits and '-' stay, '.' becomes '_', and every other byte
// (including '_', '%', '*', '>', ':', spaces and non-ASCII) becomes %XX.
// The dot mapping keeps groups and DNS names readable (networking_k8s_io).
func EscapeToken(s string) string {
	if s == "" {
		return emptyToken
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !isPlain(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isPlain(c):
			b.WriteByte(c)
		case c == '.':
			b.WriteByte('_')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0x0f])
		}
	}
	return b.String()
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(tok string) (string, error) {
	if tok == emptyToken {
		return "", nil
	}
	if tok == "" {
		return "", fmt.Errorf("%w: empty", ErrBadToken)
	}
	var b strings.Builder
	b.Grow(len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case isPlain(c):
			b.WriteByte(c)
		case c == '_':
			b.WriteByte('.')
		case c == '%' && i+2 < len(tok):
			hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
			}
			// Only the escapes EscapeToken writes are accepted, so every
			// string has exactly one token.
			if c := byte(hi<<4 | lo); isPlain(c) || c == '.' {
				return "", fmt.Errorf("%w: %q is not in canonical form", ErrBadToken, tok)
			} else {
				b.WriteByte(c)
			}
			i += 2
		default:
			return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
		}
	}
	return b.String(), nil
}

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Subjects names the NATS subjects of one cluster:
//
//	<prefix>.<cluster>.<group|core>.<version>.<resource>.<namespace|_cluster>.<name>
//	<prefix>.<cluster>.<group|core>.<version>.<resource>._snapshot.begin|end
//
// A group named "core" is %63ore, so that it cannot meet the core group.
type Subjects struct {
	// Prefix is one or more literal subject tokens, e.g. "kubebridge".
	Prefix string
	// Cluster is the cluster name, a DNS label.
	Cluster string
}

// Stream is the wildcard every subject of every cluster falls under.
func (s Subjects) Stream() string { return s.Prefix + ".>" }

// ClusterWildcard matches every subject of this cluster.
func (s Subjects) ClusterWildcard() string { return s.Prefix + "." + s.Cluster + ".>" }

// Type is the subject prefix of one resource type, without a trailing dot.
func (s Subjects) Type(r *informers.Resource) string {
	return s.TypeOf(r.GVR.Group, r.GVR.Version, r.GVR.Resource)
}

// TypeOf is the subject prefix of the type group ("" for core), version
// and resource; an empty version is the * wildcard, for readers that take
// a type at whatever version it is published.
func (s Subjects) TypeOf(group, version, resource string) string {
	g, v := groupToken(group), "*"
	if version != "" {
		v = EscapeToken(version)
	}
	return s.Prefix + "." + s.Cluster + "." + g + "." + v + "." + EscapeToken(resource)
}

// groupToken is the subject token of an API group: CoreGroupToken for the
// legacy core group, namedCoreGroupToken for a group named "core".
func groupToken(group string) string {
	switch group {
	case "":
		return CoreGroupToken
	case "core":
		return namedCoreGroupToken
	}
	return EscapeToken(group)
}

// ParseTypeTokens reverses the group, version and resource tokens of a
// type's subject.
func ParseTypeTokens(group, version, resource string) (schema.GroupVersionResource, error) {
	var gvr schema.GroupVersionResource
	var err error
	switch group {
	case CoreGroupToken:
	case namedCoreGroupToken:
		gvr.Group = "core"
	default:
		if gvr.Group, err = UnescapeToken(group); err != nil {
			return gvr, err
		}
	}
	if gvr.Version, err = UnescapeToken(version); err != nil {
		return gvr, err
	}
	gvr.Resource, err = UnescapeToken(resource)
	return gvr, err
}

// TypeWildcard matches every object and snapshot marker of one resource type.
func (s Subjects) TypeWildcard(r *informers.Resource) string { return s.Type(r) + ".>" }

// Object is the subject of one object. The verb is not part of it, so the
// last message on an object's subject is that object's current state.
func (s Subjects) Object(r *informers.Resource, namespace, name string) string {
	ns := ClusterScopeToken
	if namespace != "" {
		ns = EscapeToken(namespace)
	}
	return s.Type(r) + "." + ns + "." + EscapeToken(name)
}

// ObjectSuffixes turns cache keys (namespace/name, or name) into the last two
// tokens of their object subjects, <namespace|_cluster>.<name>, joined by
// spaces (tokens never contain one): the form of a snapshot end marker's
// unpublished extension.
func (s Subjects) ObjectSuffixes(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		ns, name, namespaced := strings.Cut(k, "/")
		if !namespaced {
			out[i] = ClusterScopeToken + "." + EscapeToken(ns)
			continue
		}
		out[i] = EscapeToken(ns) + "." + EscapeToken(name)
	}
	return strings.Join(out, " ")
}

// Marker is the subject of a snapshot begin or end marker.
func (s Subjects) Marker(r *informers.Resource, v informers.Verb) string {
	end := "begin"
	if v == informers.SnapshotEnd {
		end = "end"
	}
	return s.Type(r) + "." + SnapshotToken + "." + end
}

// ObjectRef is what an object subject names.
type ObjectRef struct {
	Group, Version, Resource string
	Namespace, Name          string
}

// ParseObject splits an object subject made by Object back into its parts.
func (s Subjects) ParseObject(subject string) (ObjectRef, error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+"."+s.Cluster+".")
	if !ok {
		return ObjectRef{}, fmt.Errorf("%w: %q is not under %s", ErrBadToken, subject, s.ClusterWildcard())
	}
	toks := strings.Split(rest, ".")
	if len(toks) != 5 || toks[3] == SnapshotToken {
		return ObjectRef{}, fmt.Errorf("%w: %q is not an object subject", ErrBadToken, subject)
	}
	gvr, err := ParseTypeTokens(toks[0], toks[1], toks[2])
	if err != nil {
		return ObjectRef{}, err
	}
	ref := ObjectRef{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	if toks[3] != ClusterScopeToken {
		if ref.Namespace, err = UnescapeToken(toks[3]); err != nil {
			return ObjectRef{}, err
		}
	}
	if ref.Name, err = UnescapeToken(toks[4]); err != nil {
		return ObjectRef{}, err
	}
	// Reject aliases such as "%" for the cluster scope or the core group.
	r := &informers.Resource{Namespaced: ref.Namespace != ""}
	r.GVR.Group, r.GVR.Version, r.GVR.Resource = ref.Group, ref.Version, ref.Resource
	if s.Object(r, ref.Namespace, ref.Name) != subject {
		return ObjectRef{}, fmt.Errorf("%w: %q is not in canonical form", ErrBadToken, subject)
	}
	return ref, nil
}

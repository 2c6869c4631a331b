package contract

import (
	"strconv"
	"strings"
)

// Kind says what a subject names.
type Kind int

// The kinds of subject.
const (
	ObjectSubject Kind = iota + 1
	BeginSubject
	EndSubject
	TermSubject
)

func (k Kind) String() string {
	switch k {
	case ObjectSubject:
		return "object"
	case BeginSubject:
		return "snapshot begin marker"
	case EndSubject:
		return "snapshot end marker"
	case TermSubject:
		return "term marker"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Subject is what a subject of this contract names.
type Subject struct {
	Kind Kind
	// Type is set for objects and snapshot markers.
	Type
	// Namespace ("" when cluster-scoped) and Name are set for objects.
	Namespace, Name string
	// Shard is the shard of a marker or term subject; the zero value
	// when it names none (unsharded).
	Shard Shard
}

// Parse reads a subject back into what it names. It is the one parser of
// subjects: it accepts exactly the subjects Subjects builds (one spelling
// per object, docs/contract.md §6) and fails with ErrBadToken otherwise.
func (s Subjects) Parse(subject string) (Subject, error) {
	rest, ok := strings.CutPrefix(subject, s.clusterPrefix())
	if !ok {
		return Subject{}, badToken(strconv.Quote(subject) + " is not under " + s.ClusterWildcard())
	}
	if rest == TermToken {
		return Subject{Kind: TermSubject}, nil
	}
	if tok, ok := strings.CutPrefix(rest, TermToken+"."); ok {
		sh, ok := parseShardToken(tok)
		if !ok {
			return Subject{}, badToken(strconv.Quote(subject) + " is not a term marker subject")
		}
		return Subject{Kind: TermSubject, Shard: sh}, nil
	}
	toks := strings.Split(rest, ".")
	if len(toks) == 6 && toks[3] == SnapshotToken {
		// A shard's marker: the shard's token between _snapshot and
		// begin or end.
		sh, ok := parseShardToken(toks[4])
		if !ok {
			return Subject{}, badToken(strconv.Quote(subject) + " is not a snapshot marker subject")
		}
		out, err := s.Parse(s.clusterPrefix() + strings.Join(append(toks[:4:4], toks[5]), "."))
		if err != nil || out.Kind == ObjectSubject {
			return Subject{}, badToken(strconv.Quote(subject) + " is not a snapshot marker subject")
		}
		out.Shard = sh
		return out, nil
	}
	if len(toks) != 5 {
		return Subject{}, badToken(strconv.Quote(subject) + " is not a kubebridge subject")
	}
	t, err := parseType(toks[0], toks[1], toks[2])
	if err != nil {
		return Subject{}, err
	}
	out := Subject{Kind: ObjectSubject, Type: t}
	switch {
	case toks[3] == SnapshotToken && toks[4] == "begin":
		out.Kind = BeginSubject
	case toks[3] == SnapshotToken && toks[4] == "end":
		out.Kind = EndSubject
	case toks[3] == SnapshotToken:
		return Subject{}, badToken(strconv.Quote(subject) + " is not a snapshot marker subject")
	default:
		if out.Namespace, out.Name, err = ParseObjectSuffix(toks[3] + "." + toks[4]); err != nil {
			return Subject{}, err
		}
	}
	// Reject aliases such as "%" for the cluster scope.
	if s.build(out) != subject {
		return Subject{}, badToken(strconv.Quote(subject) + " is not in canonical form")
	}
	return out, nil
}

// ParseObject parses a subject that must name an object.
func (s Subjects) ParseObject(subject string) (Subject, error) {
	out, err := s.Parse(subject)
	if err == nil && out.Kind != ObjectSubject {
		err = badToken(strconv.Quote(subject) + " is a " + out.Kind.String() + " subject, not an object's")
	}
	return out, err
}

func (s Subjects) build(sub Subject) string {
	s = s.OfShard(sub.Shard)
	switch sub.Kind {
	case BeginSubject:
		return s.SnapshotBegin(sub.Type)
	case EndSubject:
		return s.SnapshotEnd(sub.Type)
	case TermSubject:
		return s.Term()
	}
	return s.Object(sub.Type, sub.Namespace, sub.Name)
}

// ParseObjectSuffix reads <namespace|_cluster>.<name>, the last two tokens
// of an object subject and an entry of an end marker's unpublished list.
func ParseObjectSuffix(suffix string) (namespace, name string, err error) {
	nsTok, nameTok, ok := strings.Cut(suffix, ".")
	if !ok || strings.Contains(nameTok, ".") {
		return "", "", badToken(strconv.Quote(suffix) + " is not <namespace>.<name>")
	}
	if nsTok != ClusterScopeToken {
		if namespace, err = UnescapeToken(nsTok); err != nil {
			return "", "", err
		}
		if namespace == "" {
			return "", "", badToken(strconv.Quote(suffix) + ": an empty namespace is " + ClusterScopeToken)
		}
	}
	if name, err = UnescapeToken(nameTok); err != nil {
		return "", "", err
	}
	return namespace, name, nil
}

// parseType reverses the group, version and resource tokens of a type's
// subject.
func parseType(group, version, resource string) (Type, error) {
	var t Type
	var err error
	switch group {
	case CoreGroupToken:
	case namedCoreGroupToken:
		t.Group = "core"
	default:
		if t.Group, err = UnescapeToken(group); err != nil {
			return t, err
		}
	}
	if t.Version, err = UnescapeToken(version); err != nil {
		return t, err
	}
	t.Resource, err = UnescapeToken(resource)
	return t, err
}

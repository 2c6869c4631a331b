package contract

import "strings"

// Type is a resource type as its subjects name it. An empty Version stands
// for every version (the * wildcard) where a subject is built for reading.
type Type struct {
	Group, Version, Resource string
}

// Subjects names the NATS subjects of one cluster (docs/contract.md §6):
//
//	<prefix>.<cluster>.<group|core>.<version>.<resource>.<namespace|_cluster>.<name>
//	<prefix>.<cluster>.<group|core>.<version>.<resource>._snapshot.begin|end
//	<prefix>.<cluster>._term
//
// A group named "core" is %63ore, so that it cannot meet the core group.
// The markers and the term marker of shard i of N (N > 1) have a subject
// of their own, each written by that shard's bridges only:
//
//	<prefix>.<cluster>.<group|core>.<version>.<resource>._snapshot.<i>-of-<N>.begin|end
//	<prefix>.<cluster>._term.<i>-of-<N>
type Subjects struct {
	// Prefix is one or more literal subject tokens, e.g. "kubebridge".
	Prefix string
	// Cluster is the cluster name, a DNS label.
	Cluster string
	// Shard is the shard whose marker and term subjects these are; the
	// zero value is the unsharded bridge's. Object subjects do not name
	// a shard.
	Shard Shard
}

// OfShard is s for shard sh's marker and term subjects.
func (s Subjects) OfShard(sh Shard) Subjects {
	s.Shard = sh.Normal()
	return s
}

// shardSuffix is the shard's token after a dot, or nothing when unsharded.
func (s Subjects) shardSuffix() string {
	if !s.Shard.Sharded() {
		return ""
	}
	return "." + s.Shard.token()
}

// Stream is the wildcard every subject of every cluster falls under.
func (s Subjects) Stream() string { return s.Prefix + ".>" }

// ClusterWildcard matches every subject of this cluster.
func (s Subjects) ClusterWildcard() string { return s.Prefix + "." + s.Cluster + ".>" }

// Type is the subject prefix of one resource type, without a trailing dot;
// an empty version is the * wildcard, for readers that take a type at
// whatever version it is published.
func (s Subjects) Type(t Type) string {
	group, version, resource := typeTokens(t)
	return s.clusterPrefix() + group + "." + version + "." + resource
}

// typeTokens are a type's group, version and resource tokens; an empty
// version is the * wildcard.
func typeTokens(t Type) (group, version, resource string) {
	version = "*"
	if t.Version != "" {
		version = EscapeToken(t.Version)
	}
	return groupToken(t.Group), version, EscapeToken(t.Resource)
}

func (s Subjects) clusterPrefix() string { return s.Prefix + "." + s.Cluster + "." }

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

// TypeWildcard matches every object and snapshot marker of one resource type.
func (s Subjects) TypeWildcard(t Type) string { return s.Type(t) + ".>" }

// Markers matches both snapshot markers of one resource type, of every
// shard.
func (s Subjects) Markers(t Type) string { return s.Type(t) + "." + SnapshotToken + ".>" }

// AllMarkers matches the snapshot markers of every type of this cluster,
// of every shard: every type the bridge publishes has them, however many
// objects it has.
func (s Subjects) AllMarkers() string {
	return s.clusterPrefix() + "*.*.*." + SnapshotToken + ".>"
}

// Object is the subject of one object. The verb is not part of it, so the
// last message on an object's subject is that object's current state.
func (s Subjects) Object(t Type, namespace, name string) string {
	// One concatenation, not Type's and then another: the bridge builds
	// a subject for every event.
	group, version, resource := typeTokens(t)
	return s.Prefix + "." + s.Cluster + "." + group + "." + version + "." + resource + "." +
		namespaceToken(namespace) + "." + EscapeToken(name)
}

// Namespace matches every object of one type in one namespace ("" for the
// cluster-scoped ones).
func (s Subjects) Namespace(t Type, namespace string) string {
	return s.Type(t) + "." + namespaceToken(namespace) + ".*"
}

func namespaceToken(namespace string) string {
	if namespace == "" {
		return ClusterScopeToken
	}
	return EscapeToken(namespace)
}

func objectSuffix(namespace, name string) string {
	return namespaceToken(namespace) + "." + EscapeToken(name)
}

// ObjectOfKey is the subject of the object at a cache key (namespace/name,
// or name when cluster-scoped).
func (s Subjects) ObjectOfKey(t Type, key string) string {
	ns, name, namespaced := strings.Cut(key, "/")
	if !namespaced {
		ns, name = "", ns
	}
	return s.Object(t, ns, name)
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
			ns, name = "", ns
		}
		out[i] = objectSuffix(ns, name)
	}
	return strings.Join(out, " ")
}

// SnapshotBegin is the subject of a type's snapshot begin markers, of
// s.Shard.
func (s Subjects) SnapshotBegin(t Type) string {
	return s.Type(t) + "." + SnapshotToken + s.shardSuffix() + ".begin"
}

// SnapshotEnd is the subject of a type's snapshot end markers, of s.Shard.
func (s Subjects) SnapshotEnd(t Type) string {
	return s.Type(t) + "." + SnapshotToken + s.shardSuffix() + ".end"
}

// Term is the subject of this cluster's term markers, of s.Shard.
func (s Subjects) Term() string { return s.clusterPrefix() + TermToken + s.shardSuffix() }

// Terms are the filter subjects of the term markers of every shard of
// this cluster: the unsharded bridge's subject and every shard's.
func (s Subjects) Terms() []string {
	return []string{s.clusterPrefix() + TermToken, s.clusterPrefix() + TermToken + ".*"}
}

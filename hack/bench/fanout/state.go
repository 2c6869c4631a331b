package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// objectVersion is one object as a cache, a list or the stream holds it:
// namespace/name and resourceVersion.
type objectVersion struct {
	key, rv string
}

// state is a set of objects: how many, and a digest of their keys and
// resourceVersions, so that two sets compare without being sent whole.
type state struct {
	Objects int
	Digest  string
}

// stateOf is the state of objs, whatever their order.
func stateOf(objs []objectVersion) state {
	lines := make([]string, len(objs))
	for i, o := range objs {
		lines[i] = o.key + " " + o.rv + "\n"
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return state{Objects: len(objs), Digest: hex.EncodeToString(sum[:8])}
}

func (s state) String() string { return fmt.Sprintf("%d objects (digest %s)", s.Objects, s.Digest) }

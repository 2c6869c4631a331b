package bridge

import (
	"hash/maphash"
	"maps"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// orderGuard keeps the stream free of regressions. A snapshot item is read
// from the informer cache, which runs ahead of the handler notifications:
// an item can carry a newer state of an object than a change the handler
// has yet to deliver. The guard remembers the last resourceVersion handed on
// per uid and drops anything older, so a consumer never sees an object go
// back in time.
//
// Versions are compared per uid, not per name: a name deleted and created
// again is a new object, and the old one's delete must still be published.
// A delete is never dropped and makes the guard forget the uid. Each
// snapshot's end also forgets every uid of its type that neither an item
// nor an event touched since its begin: objects that no longer exist.
// The guard's memory is thus one entry per existing object (see
// docs/memory.md for its size).
//
// An entry is a uid's 64-bit hash and its resourceVersion as a number, as
// the fence keeps subjects: no string is kept alive, nothing in the map is
// a pointer for the garbage collector to follow, and a lookup compares
// keys without reading another string. Two uids of a type with one hash
// are left to chance (about 3 in 10^10 at 100,000 objects); the worst
// they do is drop an update whose object looked older.
//
// It is used by the pipeline's run loop only.
type orderGuard struct {
	seed  maphash.Seed
	types map[*informers.Resource]*typeGuard
}

type typeGuard struct {
	last map[uint64]guardEntry
	// epoch counts this type's snapshot begins; an entry remembers the
	// epoch it was last touched in.
	epoch uint32
	// roomMade is set once expect has made the map for a snapshot.
	roomMade bool
}

type guardEntry struct {
	// rv is the resourceVersion handed on, or 0 if it was not one that
	// compares (see resourceVersionNumber).
	rv    uint64
	epoch uint32
}

func newOrderGuard() *orderGuard {
	return &orderGuard{seed: maphash.MakeSeed(), types: map[*informers.Resource]*typeGuard{}}
}

func (g *orderGuard) of(r *informers.Resource) *typeGuard {
	t := g.types[r]
	if t == nil {
		t = &typeGuard{last: map[uint64]guardEntry{}}
		g.types[r] = t
	}
	return t
}

// expect makes room for the n objects a snapshot of r listed, before its
// items come, unless the guard already remembers half as many: a map grown
// item by item through a start-up snapshot moves every entry each time it
// doubles (docs/performance.md, §4).
//
// It does so once per type. A type with match rules lists every cached
// object while the guard remembers only those in scope: room made again
// at every periodic snapshot would be a new map each time, and the old
// one garbage.
func (g *orderGuard) expect(r *informers.Resource, n int) {
	t := g.of(r)
	if t.roomMade || len(t.last) >= n/2 {
		return
	}
	t.roomMade = true
	grown := make(map[uint64]guardEntry, n)
	maps.Copy(grown, t.last)
	t.last = grown
}

// admit reports whether c is to be published, updating what the guard
// remembers.
func (g *orderGuard) admit(c *informers.Change) bool {
	t := g.of(c.Resource)
	switch c.Verb {
	case informers.SnapshotBegin:
		t.epoch++
		return true
	case informers.SnapshotEnd:
		for key, e := range t.last {
			if e.epoch != t.epoch {
				delete(t.last, key)
			}
		}
		return true
	}
	m, err := meta.Accessor(c.Object)
	if err != nil {
		return true
	}
	key := maphash.String(g.seed, string(m.GetUID()))
	if c.Verb == informers.Deleted {
		delete(t.last, key)
		return true
	}
	rv := resourceVersionNumber(m.GetResourceVersion())
	if prev, ok := t.last[key]; ok && rv != 0 && prev.rv != 0 && rv < prev.rv {
		return false
	}
	t.last[key] = guardEntry{rv: rv, epoch: t.epoch}
	return true
}

// resourceVersionNumber is rv as a number, or 0 if rv is not one the
// apiserver's comparison accepts (k8s.io/apimachinery's
// resourceversion.CompareResourceVersion: a positive integer without
// leading zeros) or does not fit 64 bits. An rv of 0 compares with
// nothing, so its change is admitted.
func resourceVersionNumber(rv string) uint64 {
	if len(rv) > 1 && rv[0] == '0' {
		return 0
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// size is the number of objects remembered, for tests and docs.
func (g *orderGuard) size() int {
	n := 0
	for _, t := range g.types {
		n += len(t.last)
	}
	return n
}

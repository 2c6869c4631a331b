package bridge

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// orderGuard keeps the stream free of regressions. A snapshot lists the
// indexer, which runs ahead of the handler queue: an item can carry a newer
// state of an object than a change still waiting in the queue. The guard
// remembers the last resourceVersion handed on per object and drops anything
// older, so a consumer never sees an object go back in time.
//
// It is used by the sequencer goroutine only.
type orderGuard struct {
	last   map[*informers.Resource]map[objectKey]lastSeen
	active map[*informers.Resource]bool
}

type objectKey struct{ namespace, name string }

type lastSeen struct {
	rv string
	// deleted marks a delete seen during a snapshot: an item of that
	// snapshot listed before the delete must not bring the object back.
	deleted bool
}

func newOrderGuard() *orderGuard {
	return &orderGuard{last: map[*informers.Resource]map[objectKey]lastSeen{}, active: map[*informers.Resource]bool{}}
}

// admit reports whether c is to be published, updating what the guard
// remembers.
func (g *orderGuard) admit(c *informers.Change) bool {
	switch c.Verb {
	case informers.SnapshotBegin:
		g.active[c.Resource] = true
		return true
	case informers.SnapshotEnd:
		delete(g.active, c.Resource)
		for k, v := range g.last[c.Resource] {
			if v.deleted {
				delete(g.last[c.Resource], k)
			}
		}
		return true
	}
	m, err := meta.Accessor(c.Object)
	if err != nil {
		return true
	}
	objs := g.last[c.Resource]
	if objs == nil {
		objs = map[objectKey]lastSeen{}
		g.last[c.Resource] = objs
	}
	key := objectKey{m.GetNamespace(), m.GetName()}
	rv := m.GetResourceVersion()
	if prev, ok := objs[key]; ok {
		cmp, err := resourceversion.CompareResourceVersion(rv, prev.rv)
		// A delete inferred from a relist carries the last cached state, so
		// an item listed before it can have the same version: the delete
		// still wins.
		if err == nil && (cmp < 0 || cmp == 0 && prev.deleted && c.Verb == informers.SnapshotItem) {
			return false
		}
	}
	snapshotting := g.active[c.Resource]
	switch {
	case c.Verb == informers.Deleted && snapshotting:
		objs[key] = lastSeen{rv: rv, deleted: true}
	case c.Verb == informers.Deleted:
		delete(objs, key)
	default:
		objs[key] = lastSeen{rv: rv}
	}
	return true
}

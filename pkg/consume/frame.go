package consume

import "github.com/kubebridge/kubebridge/pkg/contract"

// frame is one shard's snapshots of a type.
type frame struct {
	// open is the snapshot whose begin was applied last and whose end
	// was not, begunAt its sequence; seen holds the keys of every object
	// event of the shard since.
	open    string
	begunAt uint64
	seen    map[string]struct{}
	begun   bool
	lastEnd string
}

// frame is shard sh's framing, made on first use.
func (t *typeState) frame(sh contract.Shard) *frame {
	f := t.frames[sh]
	if f == nil {
		if t.frames == nil {
			t.frames = map[contract.Shard]*frame{}
		}
		f = &frame{}
		t.frames[sh] = f
	}
	return f
}

// shardOf is the shard of the last event applied of the object at key.
func (t *typeState) shardOf(key string) contract.Shard { return t.shards[key] }

// ofShard names a shard in a violation's detail; nothing for the
// unsharded bridge.
func ofShard(sh contract.Shard) string {
	if !sh.Sharded() {
		return ""
	}
	return " of shard " + sh.String()
}

// heldBy records that the object held at key was last written by shard
// sh.
func (t *typeState) heldBy(key string, sh contract.Shard) {
	switch {
	case sh.Sharded():
		if t.shards == nil {
			t.shards = map[string]contract.Shard{}
		}
		t.shards[key] = sh
	case t.shards != nil:
		delete(t.shards, key)
	}
}

package bridge

import (
	"testing"
	"time"
)

// Two processes started in the same millisecond (the shards of a cluster,
// started together) make different snapshot ids: a marker's event id is
// its resource, snapshot id and verb, and JetStream drops a second marker
// with the same id as a duplicate.
func TestSnapshotIDsDifferAcrossProcessesStartedTogether(t *testing.T) {
	start := time.UnixMilli(1_790_000_000_000)
	seen := map[string]bool{}
	for range 100 {
		id := newSnapshotIDs(start).next()
		if seen[id] {
			t.Fatalf("snapshot id %s made twice by processes started at the same time", id)
		}
		seen[id] = true
	}
	ids := newSnapshotIDs(start)
	if a, b := ids.next(), ids.next(); a == b {
		t.Fatalf("one process made snapshot id %s twice", a)
	}
}

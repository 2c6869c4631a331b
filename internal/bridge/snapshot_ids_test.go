package bridge

import (
	"strconv"
	"strings"
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

// A snapshot id is its process's start millisecond, a random part of fixed
// width and a counter, so that ids of different start times never meet.
func TestSnapshotIDsHaveAFixedWidthRandomPart(t *testing.T) {
	for _, start := range []time.Time{time.UnixMilli(35), time.UnixMilli(36), time.UnixMilli(1_790_000_000_000)} {
		ms := strconv.FormatInt(start.UnixMilli(), 36)
		for range 100 {
			id := newSnapshotIDs(start).next()
			base, ok := strings.CutSuffix(id, "-1")
			if !ok || !strings.HasPrefix(base, ms) || len(base) != len(ms)+randomDigits {
				t.Fatalf("snapshot id %s: want %s, %d random digits, -1", id, ms, randomDigits)
			}
		}
	}
	if got := strconv.FormatUint(1<<32-1, 36); len(got) != randomDigits {
		t.Fatalf("the largest random part is %s, %d digits, not %d", got, len(got), randomDigits)
	}
}

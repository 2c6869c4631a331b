package consume

import (
	"slices"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

var (
	shard0of2 = contract.Shard{Index: 0, Count: 2}
	shard1of2 = contract.Shard{Index: 1, Count: 2}
	shard2of3 = contract.Shard{Index: 2, Count: 3}
)

// shardedHistory is history's rules on a stream of two shards, whose
// snapshots interleave:
//
//   - shard 0 owns namespace a, shard 1 namespace b;
//   - a/gone and b/gone were deleted while no bridge published: only their
//     own shard's sweep removes each;
//   - b/late is added by a deposed leader of shard 1 after shard 1's new
//     term, but stored after shard 0's later term marker: the term rule
//     is per shard, so it is fenced by shard 1's term, and shard 0's
//     events after a higher term of shard 1 are not.
func shardedHistory(f *fab) {
	var old1 uint64
	f.inShard(shard0of2, func() { f.term("s0-a") })
	f.inShard(shard1of2, func() { old1 = f.term("s1-a") })
	f.inShard(shard0of2, func() {
		f.added(cm("a", "x", "ua1", "10"))
		f.added(cm("a", "gone", "ua2", "11"))
	})
	f.inShard(shard1of2, func() {
		f.added(cm("b", "x", "ub1", "12"))
		f.added(cm("b", "gone", "ub2", "13"))
	})
	f.inShard(shard1of2, func() {
		f.term("s1-b")
		f.begin("s1")
	})
	f.inShard(shard0of2, func() { f.begin("s0") })
	f.inShard(shard1of2, func() {
		f.item("s1", cm("b", "x", "ub1", "12"))
		f.inTerm(old1, func() { f.added(cm("b", "late", "ub3", "14")) })
	})
	f.inShard(shard0of2, func() {
		f.item("s0", cm("a", "x", "ua1", "10"))
		f.end("s0", 1)
	})
	f.inShard(shard1of2, func() { f.end("s1", 1) })
	f.inShard(shard0of2, func() { f.added(cm("a", "y", "ua3", "15")) })
}

var shardedHistoryState = []string{"a/x@10", "a/y@15", "b/x@12"}

// Each shard's snapshot sweeps its own objects: the begins and ends of two
// shards interleave, and neither sweeps the other's.
func TestApplierSweepsPerShard(t *testing.T) {
	f := newFab(t, &memStore{})
	shardedHistory(f)
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, shardedHistoryState) {
		t.Errorf("held %v, want %v", got, shardedHistoryState)
	}
	if len(*vs) != 0 {
		t.Errorf("violations %v", *vs)
	}
	st := a.Stats()
	if st.Snapshots != 2 || st.Swept != 2 || st.Fenced != 1 {
		t.Errorf("snapshots %d, swept %d, fenced %d; want 2, 2 and 1 (b/late)", st.Snapshots, st.Swept, st.Fenced)
	}
}

// The term rule is per shard: a term of one shard neither fences nor lets
// through another shard's events.
func TestApplierTermRulePerShard(t *testing.T) {
	f := newFab(t, &memStore{})
	var t0 uint64
	f.inShard(shard0of2, func() { t0 = f.term("s0") })
	f.inShard(shard1of2, func() { f.term("s1") })
	// Shard 0's term (1) is below shard 1's (2): still its leader's.
	f.inShard(shard0of2, func() { f.added(cm("a", "x", "u1", "10")) })
	f.inShard(shard0of2, func() { f.term("s0-new") })
	f.inShard(shard0of2, func() {
		f.inTerm(t0, func() { f.added(cm("a", "deposed", "u2", "11")) })
	})
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got, want := held(a.Indexer("configmaps")), []string{"a/x@10"}; !slices.Equal(got, want) {
		t.Errorf("held %v, want %v", got, want)
	}
	if st := a.Stats(); st.Fenced != 1 || len(*vs) != 0 {
		t.Errorf("fenced %d, violations %v; want 1 fenced (a/deposed), none", st.Fenced, *vs)
	}
}

// After a resize an object's namespace belongs to another shard: its old
// shard's snapshot, which no longer mentions it, does not sweep it; its
// new shard's does when it no longer exists.
func TestApplierMovedObjectBelongsToItsLastShard(t *testing.T) {
	f := newFab(t, &memStore{})
	f.inShard(shard0of2, func() {
		f.term("old")
		f.added(cm("moved", "x", "u1", "10"))
		f.added(cm("moved", "y", "u2", "11"))
	})
	f.inShard(shard2of3, func() {
		f.term("new")
		f.begin("n1")
		f.item("n1", cm("moved", "x", "u1", "10"))
		f.item("n1", cm("moved", "y", "u2", "11"))
		f.end("n1", 2)
	})
	// A late end of the old shard (a snapshot it began before the
	// resize) sweeps only what the old shard wrote last: nothing now.
	f.inShard(shard0of2, func() {
		f.begin("o1")
		f.end("o1", 0)
	})
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got, want := held(a.Indexer("configmaps")), []string{"moved/x@10", "moved/y@11"}; !slices.Equal(got, want) {
		t.Errorf("after the old shard's end: held %v, want %v", got, want)
	}
	applied := len(f.msgs)
	f.inShard(shard2of3, func() {
		f.begin("n2")
		f.item("n2", cm("moved", "x", "u1", "10"))
		f.end("n2", 1)
	})
	for i := applied; i < len(f.msgs); i++ {
		if err := a.ApplyMsg(f.seqs[i], f.msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := held(a.Indexer("configmaps")), []string{"moved/x@10"}; !slices.Equal(got, want) {
		t.Errorf("after the new shard's end: held %v, want %v", got, want)
	}
	if breaches := kinds(*vs); len(breaches) != 0 {
		t.Errorf("violations %v", breaches)
	}
}

// A State bootstraps a sharded stream, from the last message per subject
// and by replay, to the state an Applier reaches reading it all.
func TestStateBootstrapsShardedStream(t *testing.T) {
	for _, mode := range []BootstrapMode{LastPerSubject, FullReplay} {
		t.Run(mode.String(), func(t *testing.T) {
			_, js, s := startJetStream(t)
			f := newFab(t, s)
			shardedHistory(f)
			var vs []Violation
			st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(mode),
				WithHooks(Hooks{OnViolation: func(v Violation) { vs = append(vs, v) }}))
			if err != nil {
				t.Fatal(err)
			}
			runState(t, st)
			if got := held(st.Indexer("configmaps")); !slices.Equal(got, shardedHistoryState) {
				t.Errorf("after the bootstrap: %v, want %v", got, shardedHistoryState)
			}
			if st.Stats().Breaches() != 0 {
				t.Errorf("violations: %v", vs)
			}
			// What each mode reads: the last message of each object's
			// subject (b/late is fenced), or the replay from the
			// earlier of the two shards' begins: items b/x and a/x,
			// then a/y.
			if applied := map[BootstrapMode]uint64{LastPerSubject: 5, FullReplay: 3}[mode]; st.Stats().Applied != applied {
				t.Errorf("applied %d events while bootstrapping, want %d", st.Stats().Applied, applied)
			}
			// Live: shard 1 sweeps b/x; shard 0's a/x stays.
			f.inShard(shard1of2, func() {
				f.begin("s1-2")
				f.end("s1-2", 0)
			})
			waitSeq(t, st, f.seqs[len(f.seqs)-1])
			if got, want := held(st.Indexer("configmaps")), []string{"a/x@10", "a/y@15"}; !slices.Equal(got, want) {
				t.Errorf("after shard 1's empty snapshot: %v, want %v", got, want)
			}
		})
	}
}

// A marker or term marker whose shard extension is not its subject's shard
// is not an event of the contract.
func TestShardOfMarkerMustBeItsSubjects(t *testing.T) {
	f := newFab(t, &memStore{})
	f.inShard(shard1of2, func() {
		f.term("s1")
		f.begin("s")
	})
	for _, m := range f.msgs {
		m.Header.Set(contract.Header(contract.ExtShard), shard0of2.String())
	}
	f.inShard(shard1of2, func() { f.added(cm("b", "x", "u1", "10")) })
	f.msgs[len(f.msgs)-1].Header.Set(contract.Header(contract.ExtShard), "2/2")
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got := kinds(*vs); !slices.Equal(got, []ViolationKind{Undecodable, Undecodable, Undecodable}) {
		t.Errorf("violations %v, want three %s", *vs, Undecodable)
	}
}

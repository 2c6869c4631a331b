package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestReshardingUnderChurn changes the number of shards from 2 to 3 and
// back to 2 under churn across 20 namespaces, as the README's procedure
// says: the old set stops, then the new set starts. No change is lost (the
// replay and the last message per subject equal the apiserver's list, and
// every object deleted through the API has its deleted event), no object
// vanishes (every deleted event is of an object deleted through the API,
// and every object a snapshot swept has its delete), and no shard fences
// another or takes another's messages for foreign ones.
func TestReshardingUnderChurn(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	nss := []string{h.ns}
	for len(nss) < 20 {
		nss = append(nss, h.newNamespace())
	}
	for _, ns := range nss {
		for i := range 3 {
			h.createCM(ns, fmt.Sprintf("pre-%d", i), nil, map[string]string{"v": "0"})
		}
	}
	vars := func(n, i int) map[string]string {
		return map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_NAMESPACES": strings.Join(nss, ","),
			"BRIDGE_SHARDS": strconv.Itoa(n), "BRIDGE_SHARD": strconv.Itoa(i), "BRIDGE_RESYNC_PERIOD": "0"}
	}
	var all []*bridge
	start := func(n int) []*bridge {
		set := make([]*bridge, n)
		for i := range n {
			set[i] = h.launchBridge(vars(n, i))
		}
		for _, b := range set {
			b.waitLog("Start-up snapshots published", readyTimeout)
		}
		all = append(all, set...)
		return set
	}
	var cs churns
	for k, ns := range nss {
		cs = append(cs, startChurn(h.cs, ns, 4, 250*time.Millisecond, uint64(100+k)))
	}
	defer cs.stop()
	set := start(2)
	for _, n := range []int{3, 2} {
		if !cs.waitOps(150, time.Minute) {
			t.Fatalf("churn stalled before going to %d shards", n)
		}
		for _, b := range set {
			b.stop()
		}
		set = start(n)
		t.Logf("now %d shards", n)
	}
	if !cs.waitOps(150, time.Minute) {
		t.Fatal("churn stalled after the last resize")
	}
	if errs := cs.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	s := &shardSet{h: h, namespaces: nss}
	want := s.list()
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	checkNoRegressions(t, st)
	checkUniqueIDs(t, msgs)
	var deleted []string
	for _, c := range cs {
		deleted = append(deleted, c.deletedUIDs()...)
	}
	checkDeletes(t, msgs, deleted)
	checkSweeps(t, msgs, st)
	apiDeleted := map[string]bool{}
	for _, uid := range deleted {
		apiDeleted[uid] = true
	}
	for _, m := range ofType(msgs, contract.TypeDeleted, typ+".") {
		if !apiDeleted[m.Ext(contract.ExtUID)] {
			t.Errorf("seq %d: deleted event of %s (uid %s), an object nobody deleted", m.Seq, m.Subject, m.Ext(contract.ExtUID))
		}
	}
	for _, m := range msgs {
		sh, err := contract.ParseShard(m.Ext(contract.ExtShard))
		if err != nil || !sh.Sharded() {
			t.Errorf("seq %d %s: shard %q", m.Seq, m.Subject, m.Ext(contract.ExtShard))
			continue
		}
		if sub, err := h.subjects().Parse(m.Subject); err == nil && sub.Kind == contract.ObjectSubject && shardOfNamespace(sub.Namespace, sh.Count) != sh.Index {
			t.Errorf("seq %d %s: written by shard %s, which does not own its namespace", m.Seq, m.Subject, sh)
		}
	}
	h.waitLastPerSubject(typ, want)
	h.verifyShards(0)
	for _, b := range all {
		if n := b.countLog(fencedLine); n > 0 {
			t.Errorf("%s was fenced", b.name)
		}
		// Whether its scan reads a moved subject's last message or its
		// publish is refused on one.
		if n := b.countLog(foreignScanLine) + b.countLog(foreignLine); n > 0 {
			t.Errorf("%s took %d messages of another shard for foreign ones", b.name, n)
		}
	}
	moved := 0
	for _, ns := range nss {
		if shardOfNamespace(ns, 2) != shardOfNamespace(ns, 3) {
			moved++
		}
	}
	t.Logf("%d of %d namespaces moved between 2 and 3 shards; %d messages, %d objects, %d swept in the replay, %d deletes through the API",
		moved, len(nss), len(msgs), len(want), len(st.Swept), len(deleted))
}

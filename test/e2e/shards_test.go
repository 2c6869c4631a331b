package e2e

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestShardsWithStandbys runs 3 shards of 2 replicas each (leader election
// per shard, on the shard's own Lease) over 30 namespaces under churn,
// every shard watching every namespace (with a label selector: the
// apiserver is shared with other tests) and keeping only its own part,
// on the shared apiserver, without the ShardedListAndWatch gate: see
// shardsWithStandbys.
func TestShardsWithStandbys(t *testing.T) {
	shardsWithStandbys(t, newHarness(t), serverIgnoredLine)
}

// shardsWithStandbys is the scenario of TestShardsWithStandbys and
// TestShardsWithTheGate. It kills each shard's leader once, creates a
// namespace while the shards run (in no shard's selector), and freezes one
// leader (SIGSTOP) until its shard's standby has taken over. Then the
// shards' streams replay to the apiserver's list, the last message per
// subject equals it, kubebridge verify --against-cluster agrees, no event
// id is stored twice, every object event comes from the shard that owns
// its namespace, every marker from its own shard's subject, nothing a
// deposed leader wrote after its shard's next term began was stored, no
// bridge but the frozen one was fenced, and every bridge logged selectorLine
// (whether the apiserver applied its shard selector).
func shardsWithStandbys(t *testing.T, h *harness, selectorLine string) {
	const n, namespaces = 3, 30
	typ := h.cmType()
	s := &shardSet{h: h, n: n, namespaces: []string{h.ns}, label: "kubebridge-e2e=" + h.prefix}
	labels := map[string]string{"kubebridge-e2e": h.prefix}
	for len(s.namespaces) < namespaces {
		s.namespaces = append(s.namespaces, h.newNamespace())
	}
	owners := make([]int, n)
	for _, ns := range s.namespaces {
		owners[shardOfNamespace(ns, n)]++
	}
	t.Logf("namespaces per shard: %v", owners)
	for _, ns := range s.namespaces {
		for i := range 3 {
			h.createCM(ns, fmt.Sprintf("pre-%d", i), labels, map[string]string{"v": "0"})
		}
		// Outside the selector: in no shard's stream.
		h.createCM(ns, "unlabelled", nil, nil)
	}

	leaders, standbys := make([]*bridge, n), make([]*bridge, n)
	for i := range n {
		leaders[i] = h.startBridge(s.vars(i))
	}
	for i := range n {
		standbys[i] = s.standby(i)
	}
	var cs churns
	for k, ns := range s.namespaces {
		cs = append(cs, startChurnWith(h.cs, ns, churnOptions{names: 4, pause: 250 * time.Millisecond, seed: uint64(k + 1), labels: labels}))
	}
	defer cs.stop()
	if !cs.waitOps(200, time.Minute) {
		t.Fatalf("churn stalled")
	}
	// A namespace no shard's selector knows: its objects still reach
	// their shard. The other shards rebuild their selectors without it,
	// restarting their watches under churn; where the apiserver filters,
	// the late ConfigMap's updates after that reach its own shard only.
	late := h.newNamespace()
	s.namespaces = append(s.namespaces, late)
	lateCM := h.createCM(late, "late", labels, map[string]string{"v": "0"})
	var all []*bridge
	all = append(all, leaders...)
	all = append(all, standbys...)
	for i := range n {
		if i != shardOfNamespace(late, n) {
			waitSelectorWithout(t, leaders[i], late)
			waitSelectorWithout(t, standbys[i], late)
		}
	}
	for i := range 5 {
		lateCM.Data["v"] = strconv.Itoa(i + 1)
		lateCM = h.updateCM(lateCM)
	}

	// Each shard's leader killed in turn; its standby takes over, and a
	// new replica becomes the shard's standby.
	for i := range n {
		leaders[i].kill()
		standbys[i].waitLog("Start-up snapshots published", 2*readyTimeout)
		leaders[i], standbys[i] = standbys[i], s.standby(i)
		all = append(all, standbys[i])
		if !cs.waitOps(100, time.Minute) {
			t.Fatalf("churn stalled after shard %d's takeover", i)
		}
	}

	// Shard 1's leader frozen past its Lease.
	frozen := leaders[1]
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen.stopped.Store(true)
	thawed := false
	defer func() {
		if !thawed {
			_ = frozen.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	standbys[1].waitLog("Start-up snapshots published", 2*readyTimeout)
	if !cs.waitOps(100, time.Minute) {
		t.Fatal("churn stalled while shard 1's leader was frozen")
	}
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed = true
	waitExitNonZero(t, frozen, "frozen leader of shard 1")

	if errs := cs.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	want := s.list()
	if _, ok := want[h.cmSubject(late, "late")]; !ok {
		t.Fatalf("the apiserver does not list %s/late", late)
	}
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	checkNoRegressions(t, st)
	checkUniqueIDs(t, msgs)
	checkShards(t, h, msgs, n)
	h.waitLastPerSubject(typ, want)
	h.verifyShards(n)
	for _, b := range all {
		if b != frozen && b.countLog(fencedLine) > 0 {
			t.Errorf("%s (not the frozen leader) was fenced", b.name)
		}
		if b.countLog(selectorLine) == 0 {
			t.Errorf("%s did not log %q", b.name, selectorLine)
		}
	}
	checkForeign(t, all, selectorLine == serverFilteredLine)
	t.Logf("%d messages, %d objects, %d swept in the replay", len(msgs), len(want), len(st.Swept))
}

// serverIgnoredLine is what a shard logs when the apiserver ignored its
// shard selector (the feature gate off).
const serverIgnoredLine = "The apiserver ignores the shard selector"

// serverFilteredLine is what a shard logs when the apiserver applied its
// shard selector (it echoed it in the list's shardInfo).
const serverFilteredLine = "The apiserver filters this shard's list and watch"

// TestShardsWithTheGate is TestShardsWithStandbys's scenario on an
// apiserver of its own with the ShardedListAndWatch feature gate on: each
// shard sends a selector leaving out the other shards' namespaces, and the
// apiserver applies it (each bridge logs so).
func TestShardsWithTheGate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := ownEnv(ctx, t, "--feature-gates=ShardedListAndWatch=true")
	shardsWithStandbys(t, newHarnessIn(t, env), serverFilteredLine)
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// shardSet is N shards of bridges over a set of namespaces.
type shardSet struct {
	h          *harness
	n          int
	namespaces []string
	pods       int
	// label, when set, selects the set's ConfigMaps, which the shards
	// then watch in every namespace (each filtering its own part
	// itself); else they watch the namespaces by name.
	label string
}

// vars configure a replica of shard i with leader election on a short
// Lease; the Lease's name is the default, per shard.
func (s *shardSet) vars(i int) map[string]string {
	s.pods++
	v := s.h.electionVars(fmt.Sprintf("shard-%d-pod-%d", i, s.pods))
	v["BRIDGE_LEASE_NAME"] = ""
	v["BRIDGE_NAMESPACES"] = strings.Join(s.namespaces, ",")
	if s.label != "" {
		v["BRIDGE_NAMESPACES"] = ""
		v["BRIDGE_RESOURCES"] = "configmaps | labels=" + s.label
	}
	v["BRIDGE_SHARDS"] = strconv.Itoa(s.n)
	v["BRIDGE_SHARD"] = strconv.Itoa(i)
	// Snapshots every 2s: the shards' snapshots interleave in the stream,
	// and a frozen leader has one due the moment it thaws.
	v["BRIDGE_RESYNC_PERIOD"] = "2s"
	// The apiserver's shard selector rebuilt every second: a namespace
	// created while the shards run is soon left out by the others.
	v["BRIDGE_SHARD_SELECTOR_REFRESH"] = "1s"
	return v
}

// standby launches a replica of shard i and waits until it is a synced
// standby.
func (s *shardSet) standby(i int) *bridge {
	b := s.h.launchBridge(s.vars(i))
	b.waitLog("Standby: informer caches synced", readyTimeout)
	return b
}

// list is the apiserver's ConfigMaps of the set's namespaces (and label).
func (s *shardSet) list() map[string]string {
	out := map[string]string{}
	for subj, rv := range s.h.listConfigMaps("", metav1.ListOptions{LabelSelector: s.label}) {
		for _, ns := range s.namespaces {
			if strings.HasPrefix(subj, s.h.cmType()+"."+ns+".") {
				out[subj] = rv
			}
		}
	}
	return out
}

// churns are churns in several namespaces.
type churns []*churn

func (cs churns) ops() int64 {
	var n int64
	for _, c := range cs {
		n += c.ops()
	}
	return n
}

func (cs churns) waitOps(n int64, timeout time.Duration) bool {
	target := cs.ops() + n
	for deadline := time.Now().Add(timeout); cs.ops() < target; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func (cs churns) stop() []error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.stop()...)
	}
	return errs
}

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

// waitSelectorWithout waits until b logs a shard selector rebuilt to leave
// out namespace ns.
func waitSelectorWithout(t *testing.T, b *bridge, ns string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		for _, line := range strings.Split(b.output(), "\n") {
			if strings.Contains(line, selectorRebuiltLine) && strings.Contains(line, `"`+ns+`"`) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q with namespace %s within 30s", b.name, selectorRebuiltLine, ns)
		}
	}
}

// selectorRebuiltLine is what a shard logs when it rebuilt its apiserver
// shard selector; the line names the namespaces it now leaves out.
const selectorRebuiltLine = "Shard selector rebuilt from the namespaces"

// checkForeign reads kubebridge_shard_foreign_objects_total of every
// bridge still running. Where the apiserver filters, a shard receives of
// other shards' objects only those of namespaces newer than its selector:
// here the late namespace's ConfigMap as it was created, before the
// selectors were rebuilt, and none of its later updates. Where it does
// not, every shard receives the others' churn.
func checkForeign(t *testing.T, bridges []*bridge, filtered bool) {
	t.Helper()
	var counts []string
	for _, b := range bridges {
		if b.exited() {
			continue
		}
		n := b.scrape().sum("kubebridge_shard_foreign_objects_total")
		counts = append(counts, fmt.Sprintf("%s %v", b.name, n))
		switch {
		case filtered && n > 1:
			t.Errorf("%s received %v objects of other shards, though the apiserver filters: want at most the late namespace's one", b.name, n)
		case !filtered && n == 0:
			t.Errorf("%s received no object of other shards, though the apiserver does not filter", b.name)
		}
	}
	t.Logf("objects of other shards received and dropped (kubebridge_shard_foreign_objects_total): %s", strings.Join(counts, ", "))
}

func shardOfNamespace(ns string, n int) int { return shard.Of(shard.Key(ns, ""), n) }

// verifyShards runs kubebridge verify --against-cluster over the stream: it
// follows every shard's snapshots and terms, and its replay must equal the
// apiserver's list within the scope the begin markers name, without a
// finding. With shards > 0 it checks that it read that many shards' terms.
func (h *harness) verifyShards(shards int) {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	args := []string{"verify", "-s", h.natsURL, "--stream", h.stream, "--prefix", h.prefix, "--cluster", cluster,
		"--against-cluster", "--kubeconfig", h.env.KubeconfigPath(), "-o", "json", "configmaps"}
	code := cli.Run(ctx, args, &out, &errOut)
	var report struct {
		Counts      map[string]int `json:"counts"`
		TermMarkers int            `json:"termMarkers"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("kubebridge verify -o json: %v\n%s%s", err, out.String(), errOut.String())
	}
	if code != 0 {
		t.Errorf("kubebridge verify --against-cluster: exit %d, counts %v\n%s%s", code, report.Counts, out.String(), errOut.String())
	}
	if shards > 0 && report.TermMarkers < shards {
		t.Errorf("kubebridge verify read %d term markers, fewer than the %d shards", report.TermMarkers, shards)
	}
}

// checkShards checks that every message is its shard's, and applies the
// term rule per shard: nothing a shard's deposed leader wrote was stored
// after the shard's next term marker.
func checkShards(t *testing.T, h *harness, msgs []replay.Message, n int) {
	t.Helper()
	subjects := h.subjects()
	current := map[contract.Shard]uint64{}
	terms := map[contract.Shard]int{}
	for _, m := range msgs {
		sh, err := contract.ParseShard(m.Ext(contract.ExtShard))
		if err != nil || sh.Count != n {
			t.Errorf("seq %d %s %s: shard %q", m.Seq, m.Event.Type(), m.Subject, m.Ext(contract.ExtShard))
			continue
		}
		sub, err := subjects.Parse(m.Subject)
		if err != nil {
			t.Errorf("seq %d: %v", m.Seq, err)
			continue
		}
		if sub.Kind == contract.ObjectSubject {
			if owner := shardOfNamespace(sub.Namespace, n); owner != sh.Index {
				t.Errorf("seq %d %s: written by shard %s, its namespace is shard %d's", m.Seq, m.Subject, sh, owner)
			}
		} else if sub.Shard != sh {
			t.Errorf("seq %d %s of shard %s on the subject of shard %s", m.Seq, m.Event.Type(), sh, sub.Shard)
		}
		if m.Event.Type() == contract.TypeTerm {
			current[sh] = m.Seq
			terms[sh]++
			continue
		}
		if term, err := contract.TermOf(m.Header); err != nil || term < current[sh] {
			t.Errorf("seq %d %s %s of shard %s: term %d stored after the shard's term %d began (%v)", m.Seq, m.Event.Type(), m.Subject, sh, term, current[sh], err)
		}
	}
	var counts []string
	for i := range n {
		counts = append(counts, fmt.Sprintf("%d/%d: %d", i, n, terms[contract.Shard{Index: i, Count: n}]))
	}
	slices.Sort(counts)
	t.Logf("terms per shard: %s", strings.Join(counts, ", "))
}

// foreignScanLine is what a bridge's start-up scan logs for a subject whose
// last message no bridge of the cluster wrote.
const foreignScanLine = "A foreign message is the last of its subject"

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

package e2e

import (
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// fencedLine is what a replica refused by a newer term logs on exit.
const fencedLine = "fenced by a newer term"

// notLeadingLine is what a replica logs on exit when its publishers found
// its Lease stale before its elector did.
const notLeadingLine = "this writer may no longer lead"

// checkLastPerSubject waits until the raw last-per-subject view of the
// ConfigMaps (no term rule applied) equals the apiserver's list: nothing a
// deposed leader stored is any object's current state.
func (h *harness) checkLastPerSubject(typ string) {
	h.t.Helper()
	h.waitLastPerSubject(typ, h.listConfigMaps(h.ns, metav1.ListOptions{}))
}

// settleAfterTakeover ends a takeover test: the churn stops, the replay
// converges (see settle), two terms began, nothing of the old term was
// stored after the new one began, and the raw last-per-subject view equals
// the apiserver's list.
func (h *harness) settleAfterTakeover(c *churn, typ string) *replay.State {
	h.t.Helper()
	msgs, st := h.settle(c, typ, 2, "the new leader's start-up snapshot")
	terms, late := termsOf(h.t, msgs)
	if len(terms) != 2 {
		h.t.Errorf("terms %v, want two", terms)
	}
	for _, l := range late {
		h.t.Errorf("stored after the newer term began: %s", l)
	}
	h.checkLastPerSubject(typ)
	return st
}

// waitExitNonZero waits for the old leader b to exit with a non-zero code.
func waitExitNonZero(t *testing.T, b *bridge, who string) int {
	t.Helper()
	code, ok := b.waitExit(stopTimeout)
	if !ok {
		t.Fatalf("the %s still runs %v after the standby took over", who, stopTimeout)
	}
	if code == 0 {
		t.Errorf("the %s exited 0, want non-zero", who)
	}
	return code
}

// TestSecondBridgeFencesTheFirst runs a second bridge without leader
// election next to a first one, as a misconfigured Deployment would: the
// second one's term fences the first, whose next publish on a subject the
// second has written is refused by JetStream; the first exits non-zero.
// The stream then holds the cluster's state, in the replay and in the last
// message per subject alike.
func TestSecondBridgeFencesTheFirst(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	h.createCMs(200)
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps"}
	b1 := h.startBridge(vars)
	c := startChurn(h.cs, h.ns, 40, 5*time.Millisecond, 5)
	defer c.stop()
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	b2 := h.startBridge(vars)
	b1.stopped.Store(true)
	code, ok := b1.waitExit(stopTimeout)
	if !ok {
		t.Fatalf("the first bridge still runs %v after a second one began a newer term", stopTimeout)
	}
	if code == 0 || b1.countLog(fencedLine) == 0 {
		t.Errorf("the first bridge exited %d; want non-zero with a line saying it was %s", code, fencedLine)
	}
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	msgs, st := h.settle(c, typ, 2, "the second bridge's start-up snapshot")
	terms, late := termsOf(t, msgs)
	if len(terms) != 2 {
		t.Errorf("terms %v, want two (one per bridge)", terms)
	}
	if len(late) != len(st.Fenced) {
		t.Errorf("%d messages of the older term after the newer began, the reference consumer ignored %d", len(late), len(st.Fenced))
	}
	t.Logf("terms %v; %d messages of the first bridge stored after the second's term began, on subjects the second had not written yet (ignored by consumers)", terms, len(late))
	h.checkLastPerSubject(typ)
	if m := b2.scrape(); m.sum("kubebridge_term") != float64(terms[len(terms)-1]) {
		t.Errorf("kubebridge_term %v, want %d", m.sum("kubebridge_term"), terms[len(terms)-1])
	}
}

// TestPausedLeaderIsFenced freezes the leader (SIGSTOP), as a long GC
// pause, a frozen VM or clock skew would, until the standby has taken the
// Lease and written every object; then it thaws it. Whatever the thawed
// leader still tries to publish (its periodic snapshot of a stale cache,
// changes it held) is stopped by its own Lease check, or refused by
// JetStream: nothing it stores after the new term began, and it exits
// non-zero.
func TestPausedLeaderIsFenced(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	h.createCMs(300)
	v1 := h.electionVars("bridge-a")
	// A snapshot every second: when the leader thaws, one is due at once.
	v1["BRIDGE_RESYNC_PERIOD"] = "1s"
	b1, b2, c := h.leaderUnderChurn(v1, 7)
	defer c.stop()
	if err := b1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b1.stopped.Store(true)
	thawed := false
	defer func() {
		if !thawed {
			_ = b1.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	b2.waitLog("Start-up snapshots published", 2*readyTimeout)
	// Changes while the old leader is frozen: its cache is stale now.
	if !c.waitOps(150, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	if err := b1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed = true
	code := waitExitNonZero(t, b1, "thawed leader")
	// The new leader had written every subject before the thaw, so the
	// fence leaves the old one no subject at all; and the publishers ask
	// the Lease before each publish.
	h.settleAfterTakeover(c, typ)
	switch {
	case b1.countLog(notLeadingLine) > 0:
		t.Logf("the thawed leader's publishers found its Lease stale and exited %d", code)
	case b1.countLog(fencedLine) > 0:
		t.Logf("the thawed leader published, was refused by JetStream and exited %d", code)
	default:
		t.Logf("the thawed leader's elector saw it had lost the Lease and exited %d", code)
	}
}

// TestPartitionedLeader cuts the leader off from the apiserver (a TCP
// proxy that holds every byte) while it still reaches NATS: it cannot
// renew its Lease, stops publishing at the renew deadline and exits; the
// standby takes over. Nothing the old leader publishes after the new term
// began is stored, no object is brought back by its stale snapshot items
// or swept by its end marker, and no resourceVersion regresses.
func TestPartitionedLeader(t *testing.T) {
	env := testenv.Get(t)
	h := newHarness(t)
	typ := h.cmType()
	h.createCMs(300)
	proxy := startProxy(t, strings.TrimPrefix(env.APIServerURL(), "https://"))
	v1 := h.electionVars("bridge-a")
	v1["KUBECONFIG"] = h.kubeconfigVia(proxy)
	// Snapshots of its stale cache keep coming while it is cut off.
	v1["BRIDGE_RESYNC_PERIOD"] = "1s"
	b1, b2, c := h.leaderUnderChurn(v1, 11)
	defer c.stop()
	before := maps.Clone(h.listConfigMaps(h.ns, metav1.ListOptions{}))
	proxy.Pause()
	cut := time.Now()
	b1.stopped.Store(true)
	b2.waitLog("Start-up snapshots published", 2*readyTimeout)
	t.Logf("the standby's start-up snapshot was stored %v after the partition", time.Since(cut).Round(time.Millisecond))
	code := waitExitNonZero(t, b1, "partitioned leader")
	if !strings.Contains(b1.output(), "lost the leader Lease") && b1.countLog(notLeadingLine) == 0 && b1.countLog(fencedLine) == 0 {
		t.Errorf("the partitioned leader's exit line says neither that it lost the Lease, nor that its publishers found it stale, nor that it was fenced")
	}
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	st := h.settleAfterTakeover(c, typ)
	t.Logf("%d objects before the partition; %d swept in the replay; the old leader exited %d", len(before), len(st.Swept), code)
}

// leaderUnderChurn starts a leader with vars and a standby (bridge-b), and
// once the standby is ready ConfigMaps churning (seed); it returns after
// 100 changes. The caller stops the churn.
func (h *harness) leaderUnderChurn(vars map[string]string, seed uint64) (leader, standby *bridge, c *churn) {
	h.t.Helper()
	leader = h.startBridge(vars)
	standby = h.launchBridge(h.electionVars("bridge-b"))
	standby.waitLog("Standby: informer caches synced", readyTimeout)
	c = startChurn(h.cs, h.ns, 60, 5*time.Millisecond, seed)
	if !c.waitOps(100, time.Minute) {
		c.stop()
		h.t.Fatalf("churn stalled: %v", c)
	}
	return leader, standby, c
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// electionVars configure a bridge with leader election on a short Lease.
func (h *harness) electionVars(pod string) map[string]string {
	return map[string]string{
		"BRIDGE_RESOURCES":            "configmaps",
		"BRIDGE_LEADER_ELECTION":      "true",
		"BRIDGE_LEASE_NAMESPACE":      h.ns,
		"BRIDGE_LEASE_NAME":           "kubebridge-e2e",
		"BRIDGE_LEASE_DURATION":       "4s",
		"BRIDGE_LEASE_RENEW_DEADLINE": "3s",
		"BRIDGE_LEASE_RETRY_PERIOD":   "500ms",
		"POD_NAME":                    pod,
	}
}

// leaseName is the Lease electionVars name.
func (h *harness) leaseName() string {
	return h.electionVars("")["BRIDGE_LEASE_NAME"]
}

// checkStandby requires b to be a synced standby: ready, not leading, and
// nothing published.
func checkStandby(t *testing.T, b *bridge) {
	t.Helper()
	if code, body, err := b.get("/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("%s: a synced standby's /readyz: %d %q %v, want 200", b.name, code, body, err)
	}
	m := b.scrape()
	if got := m.sum("kubebridge_leader"); got != 0 {
		t.Errorf("%s: kubebridge_leader %v on a standby, want 0", b.name, got)
	}
	if got := m.sum("kubebridge_events_published_total"); got != 0 {
		t.Errorf("%s: a standby published %v events", b.name, got)
	}
	if strings.Contains(b.output(), "Leading:") {
		t.Errorf("%s logged that it leads while the other replica does", b.name)
	}
}

// TestFailoverAfterSIGKILL runs two replicas with leader election under
// churn and kills the leader: the standby takes over, and the replayed
// stream equals the apiserver's list with no resourceVersion regression
// and no duplicate id. Only one replica published at a time: the standby
// published nothing before the kill, and the leader was dead after it.
func TestFailoverAfterSIGKILL(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	if n := failoverObjects(t); n > 0 {
		start := time.Now()
		h.createCMs(n)
		t.Logf("created %d ConfigMaps in %v", n, time.Since(start).Round(time.Millisecond))
	}

	b1 := h.startBridge(h.electionVars("bridge-a"))
	b2 := h.launchBridge(h.electionVars("bridge-b"))
	b2.waitLog("Standby: informer caches synced", readyTimeout)
	if m := b1.scrape(); m.sum("kubebridge_leader") != 1 || m.sum("kubebridge_leadership_transitions_total") != 1 {
		t.Errorf("bridge-1: kubebridge_leader %v, transitions %v; want 1, 1", m.sum("kubebridge_leader"), m.sum("kubebridge_leadership_transitions_total"))
	}

	c := startChurn(h.cs, h.ns, 40, 5*time.Millisecond, 3)
	defer c.stop()
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v, errors %v", c, c.stop())
	}
	checkStandby(t, b2)
	b1.kill()
	killed := time.Now()
	t.Logf("bridge-1 (leader) killed after churn: %v", c)

	b2.waitLog("First event published as leader", 2*readyTimeout)
	t.Logf("SIGKILL to the new leader's first event (seen in its log, polled every 50ms): %v", time.Since(killed).Round(time.Millisecond))
	for _, l := range lines(b2.output()) {
		if strings.Contains(l, "Leading:") || strings.Contains(l, "First event published as leader") {
			t.Logf("bridge-2: %s", l)
		}
	}
	b2.waitLog("Start-up snapshots published", 2*readyTimeout)
	if lead, ok := logTime(b2.output(), "Leading:"); ok {
		if done, ok := logTime(b2.output(), "Start-up snapshots published"); ok {
			t.Logf("bridge-2: missed deletes and start-up snapshot stored %v after taking the Lease", done.Sub(lead).Round(time.Millisecond))
		}
	}
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	msgs, st := h.settle(c, typ, 2, "the new leader's start-up snapshot")
	if m := b2.scrape(); m.sum("kubebridge_leader") != 1 || m.sum("kubebridge_leadership_transitions_total") != 1 {
		t.Errorf("bridge-2: kubebridge_leader %v, transitions %v; want 1, 1", m.sum("kubebridge_leader"), m.sum("kubebridge_leadership_transitions_total"))
	}

	// A leader that stops releases the Lease once it has drained.
	b2.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := h.cs.CoordinationV1().Leases(h.ns).Get(ctx, h.leaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		t.Errorf("after SIGTERM the Lease is still held by %q", *l.Spec.HolderIdentity)
	}
	t.Logf("%d messages, %d swept at the takeover", len(msgs), len(st.Swept))
}

// TestDeposedLeaderExits takes the Lease away from the leader: once its
// renewals fail for the renew deadline it stops publishing and exits
// non-zero with one line saying why, so that Kubernetes restarts it as a
// standby.
func TestDeposedLeaderExits(t *testing.T) {
	h := newHarness(t)
	b1 := h.startBridge(h.electionVars("bridge-a"))

	leases := h.cs.CoordinationV1().Leases(h.ns)
	// The bridge renews the Lease meanwhile: an update may conflict.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, h.leaseName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder, secs, now := "intruder", int32(3600), metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &holder, &secs, &now, &now
		if _, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Logf("take the Lease: %v (trying again)", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("take the Lease: %v", err)
	}
	b1.stopped.Store(true)
	code, ok := b1.waitExit(stopTimeout)
	if !ok {
		t.Fatalf("bridge-1 still runs %v after its Lease was taken", stopTimeout)
	}
	if code == 0 {
		t.Errorf("a deposed leader exited 0, want non-zero so that it restarts as a standby")
	}
	if n := b1.countLog("lost the leader Lease"); n != 1 {
		t.Errorf("%d lines say the Lease was lost, want 1", n)
	}
	if m := b1.output(); !strings.Contains(m, "bridge: lost the leader Lease") {
		t.Errorf("the exit line is missing")
	}
}

// failoverObjects is $KUBEBRIDGE_E2E_FAILOVER_OBJECTS: ConfigMaps created
// before the failover, to measure the takeover with a large snapshot.
func failoverObjects(t *testing.T) int {
	v := os.Getenv("KUBEBRIDGE_E2E_FAILOVER_OBJECTS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("KUBEBRIDGE_E2E_FAILOVER_OBJECTS=%q: want a count", v)
	}
	return n
}

// createCMs creates n ConfigMaps of about 1 KB in the test's namespace.
func (h *harness) createCMs(n int) {
	h.t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%06d", i)},
					Data: map[string]string{"v": strings.Repeat("x", 1024)}}, metav1.CreateOptions{})
				cancel()
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		h.t.Fatalf("create ConfigMaps: %v", err)
	}
}

// logTime is the klog timestamp of the first line of out containing substr.
func logTime(out, substr string) (time.Time, bool) {
	for _, l := range lines(out) {
		if !strings.Contains(l, substr) || !klogLine.MatchString(l) {
			continue
		}
		ts, err := time.Parse("0102 15:04:05.000000", l[1:21])
		return ts, err == nil
	}
	return time.Time{}, false
}

// TestHandoverOnSIGTERM stops the leader gracefully during churn: it drains,
// releases the Lease, and a standby takes over without waiting for the
// Lease to expire; a standby stopped with SIGTERM exits 0 without ever
// leading. The replay equals the apiserver's list afterwards.
func TestHandoverOnSIGTERM(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()

	b1 := h.startBridge(h.electionVars("bridge-a"))
	b2 := h.launchBridge(h.electionVars("bridge-b"))
	b3 := h.launchBridge(h.electionVars("bridge-c"))
	b2.waitLog("Standby: informer caches synced", readyTimeout)
	b3.waitLog("Standby: informer caches synced", readyTimeout)
	b3.stop() // a standby: exit 0
	if strings.Contains(b3.output(), "Leading:") {
		t.Errorf("bridge-3 led although bridge-1 held the Lease")
	}

	c := startChurn(h.cs, h.ns, 40, 5*time.Millisecond, 4)
	defer c.stop()
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v, errors %v", c, c.stop())
	}
	checkStandby(t, b2)
	stopped := time.Now()
	b1.stop()
	if !strings.Contains(b1.output(), "Released the Lease") {
		t.Errorf("bridge-1 did not log that it released the Lease")
	}
	b2.waitLog("First event published as leader", 2*readyTimeout)
	t.Logf("SIGTERM of the leader to the new leader's first event (log polled every 50ms): %v", time.Since(stopped).Round(time.Millisecond))
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	h.settle(c, typ, 2, "the new leader's start-up snapshot")
}

package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// cmResource is the configmaps type as the metrics' resource label and
// the ids name it.
const cmResource = "configmaps.v1"

// TestSnapshotWithChurn starts the bridge over 5,000 ConfigMaps while four
// clients create, update and delete them, with a publish window of 8 and
// a byte budget of 256 KiB, so that the start-up snapshot is far larger
// than what can be buffered or in flight. A snapshot must never cause a
// live change to be lost or a second snapshot to be needed: every
// observed change is published or accounted for as merged or superseded
// (the metrics' identity), the stream holds exactly one snapshot, live
// events are published in the middle of it, and both invariants hold: no
// resourceVersion goes back for any uid, and the mark-and-sweep replay
// equals the apiserver's list.
func TestSnapshotWithChurn(t *testing.T) {
	const objects = 5000
	h := newHarness(t)
	typ := h.cmType()
	h.createManyWith(objects, func(i int) string { return churnName("churn-", i) }, 512)

	c := startChurnWith(h.cs, h.ns, churnOptions{names: objects, workers: 4, pause: 2 * time.Millisecond, seed: 11, filler: 512})
	defer c.stop()
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v, errors %v", c, c.stop())
	}
	vars := pressureVars("8", "256Ki")
	vars["BRIDGE_RESOURCES"] = "configmaps"
	vars["BRIDGE_RESYNC_PERIOD"] = "0"
	startOps := c.ops()
	b := h.launchBridge(vars)
	b.waitLog("Start-up snapshots published", 3*time.Minute)
	during := c.ops() - startOps
	// Changes after the snapshot too: the bridge must be back to plain
	// live events.
	if !c.waitOps(200, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	if errs := c.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	t.Logf("churn: %v; %d requests between the bridge's start and its start-up snapshot being published", c, during)

	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	acct := b.waitNoneDropped(cmResource, convergeTimeout)
	t.Logf("accounting: %v", acct)

	ends := checkSnapshots(t, msgs)
	begins := ofType(msgs, contract.TypeSnapshotBegin, typ+".")
	if len(begins) != 1 || ends[typ] != 1 {
		t.Errorf("%d snapshots begun and %d completed, want only the start-up one:\n%s", len(begins), ends[typ], describe(begins))
	}
	if n := b.scrape().sum("kubebridge_snapshots_total", "resource", cmResource); n != 1 {
		t.Errorf("kubebridge_snapshots_total for %s = %v, want 1 (the start-up snapshot)", cmResource, n)
	}
	checkNoRegressions(t, st)
	checkUniqueIDs(t, msgs)
	if n := checkSweeps(t, msgs, st); n > 0 {
		t.Logf("%d objects swept by the snapshot end just before their deleted event", n)
	}
	if never := checkDeletes(t, msgs, c.deletedUIDs()); never > 0 {
		t.Logf("%d objects were created and deleted without ever being published", never)
	}

	// Live events were published while the snapshot was: they are not
	// held behind it.
	if len(begins) > 0 {
		end := ofType(msgs, contract.TypeSnapshotEnd, typ+".")
		var inside, items int
		for _, m := range msgs {
			if m.Seq > begins[0].Seq && (len(end) == 0 || m.Seq < end[0].Seq) {
				switch m.Event.Type() {
				case contract.TypeSnapshotItem:
					items++
				case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
					inside++
				}
			}
		}
		t.Logf("start-up snapshot: %d items, with %d live events published between its markers", items, inside)
		if inside == 0 {
			t.Errorf("no live event between the start-up snapshot's markers although %d requests were made while it was published: live events waited for the whole snapshot", during)
		}
	}
	coalescedEvents := 0
	for _, m := range liveEvents(msgs) {
		if n, _ := m.Coalesced(); n > 1 {
			coalescedEvents++
		}
	}
	t.Logf("%d messages: %d live events (%d coalesced) standing for %d changes; %d changes observed by the bridge",
		len(msgs), len(liveEvents(msgs)), coalescedEvents, st.Changes[typ], int(acct.observed))
	if st.Changes[typ] > int(acct.observed) {
		t.Errorf("the stream's events stand for %d changes, more than the %v the bridge observed", st.Changes[typ], acct.observed)
	}
}

// TestNATSOutage stops NATS while about 200 ConfigMaps keep changing,
// until they have changed a thousand times and for at least 20 seconds,
// with a publish window of 4 and a byte budget of 256 KiB: far more
// changes than can be held as encoded messages, over several retries at
// the longest backoff. No change may be lost and no snapshot may be needed to
// recover: pending changes of one object merge (the coalesced extension),
// every observed change is accounted for, the stream holds only the
// start-up snapshot, the replayed state equals the apiserver's list, no
// uid's resourceVersion goes back and no event is stored twice.
func TestNATSOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("the outage lasts 20s or more")
	}
	const names = 200
	env := testenv.Get(t)
	h := newHarness(t)
	typ := h.cmType()
	t.Cleanup(func() {
		if env.NATSServer() == nil {
			if err := env.StartNATS(); err != nil {
				t.Errorf("restart NATS for the next tests: %v", err)
			}
		}
	})
	h.createManyWith(names, func(i int) string { return churnName("churn-", i) }, 1024)
	vars := pressureVars("4", "256Ki")
	vars["BRIDGE_RESOURCES"] = "configmaps"
	vars["BRIDGE_RESYNC_PERIOD"] = "0"
	b := h.startBridge(vars)

	c := startChurnWith(h.cs, h.ns, churnOptions{names: names, workers: 2, pause: 5 * time.Millisecond, seed: 3, filler: 1024})
	defer c.stop()
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	before, stopped := c.ops(), time.Now()
	env.StopNATS()
	t.Log("NATS stopped")
	// The outage lasts until the churn has made 1,000 changes, several
	// times what the bridge may hold (checked below), and at least 20s:
	// failed publishes back off from 100ms to BRIDGE_PUBLISH_MAX_BACKOFF
	// (5s) in about 6s and then retry at that longest wait, again and
	// again. The floor is the behaviour under test, not a wait for a
	// condition.
	c.waitOps(1000, time.Minute)
	time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	during := c.ops() - before
	if err := env.StartNATS(); err != nil {
		t.Fatal(err)
	}
	outage := time.Since(stopped).Round(time.Second)
	t.Logf("NATS started again after %v; %d changes during the outage", outage, during)
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	if errs := c.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	t.Logf("churn: %v", c)
	// At 1 KiB of data per object an updated event is over 2 KiB: a
	// thousand changes are several times the byte budget and the window.
	if during < 1000 {
		t.Fatalf("only %d changes during the outage: too few to exceed what the bridge may buffer", during)
	}

	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	acct := b.waitNoneDropped(cmResource, convergeTimeout)
	t.Logf("accounting: %v", acct)

	ends := checkSnapshots(t, msgs)
	if begins := ofType(msgs, contract.TypeSnapshotBegin, typ+"."); len(begins) != 1 || ends[typ] != 1 {
		t.Errorf("%d snapshots begun and %d completed, want only the start-up one: recovering from an outage must not need a snapshot:\n%s", len(begins), ends[typ], describe(begins))
	}
	m := b.scrape()
	if n := m.sum("kubebridge_snapshots_total", "resource", cmResource); n != 1 {
		t.Errorf("kubebridge_snapshots_total for %s = %v, want 1 (the start-up snapshot)", cmResource, n)
	}
	checkNoRegressions(t, st)
	checkUniqueIDs(t, msgs)
	// The start-up snapshot ended before the first change: nothing can be
	// swept, every delete must be an event.
	if len(st.Swept) > 0 {
		t.Errorf("%d objects swept although there was no snapshot after the changes: %v", len(st.Swept), st.Swept[:min(len(st.Swept), 10)])
	}
	if never := checkDeletes(t, msgs, c.deletedUIDs()); never > 0 {
		t.Logf("%d objects were created and deleted during the outage without ever being published", never)
	}

	// The changes of the outage did not fit: they must have been merged,
	// and the merged events say so.
	live := liveEvents(msgs)
	coalesced, maxN := 0, 0
	for _, e := range live {
		n, err := e.Coalesced()
		if err != nil {
			t.Errorf("seq %d: %v", e.Seq, err)
		}
		if n > 1 {
			coalesced++
			maxN = max(maxN, n)
		}
	}
	t.Logf("%d messages: %d live events, %d of them coalesced (up to %d changes in one), standing for %d changes; %d changes made by the churn",
		len(msgs), len(live), coalesced, maxN, st.Changes[typ], c.ops())
	if coalesced == 0 || acct.coalesced == 0 {
		t.Errorf("%d changes during a %v outage, yet %d events carry the coalesced extension and kubebridge_changes_coalesced_total is %v: the changes that did not fit were not merged",
			during, outage, coalesced, acct.coalesced)
	}
	for _, want := range []string{"Disconnected from NATS", "Reconnected to NATS"} {
		if b.countLog(want) == 0 {
			t.Errorf("the bridge did not log %q", want)
		}
	}
}

// streamChanges sums, per type subject, the changes the live events of
// msgs stand for, by verb.
func streamChanges(msgs []replay.Message, typ string) map[string]int {
	out := map[string]int{}
	for _, m := range liveEvents(msgs) {
		if typePrefixOf(m.Subject) != typ {
			continue
		}
		n, err := m.Coalesced()
		if err != nil {
			n = 1
		}
		out[m.Event.Type()] += n
	}
	return out
}

// typePrefixOf strips namespace and name from an object's subject.
func typePrefixOf(subject string) string {
	for i, dots := len(subject)-1, 0; i >= 0; i-- {
		if subject[i] == '.' {
			if dots++; dots == 2 {
				return subject[:i]
			}
		}
	}
	return subject
}

// fmtCounts renders verb counts in a fixed order.
func fmtCounts(c map[string]int) string {
	return fmt.Sprintf("%d added, %d updated, %d deleted", c[contract.TypeAdded], c[contract.TypeUpdated], c[contract.TypeDeleted])
}

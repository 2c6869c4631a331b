package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestRestartAfterSIGKILL kills the bridge while objects keep changing,
// changes (and deletes) objects while it is down, and starts it again on
// the same stream: once the new start-up snapshot is published the
// replayed state is the apiserver's, deletes missed while down are
// published as deleted (finalstateunknown), and no resourceVersion goes
// back.
func TestRestartAfterSIGKILL(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	del := h.createCM(h.ns, "fixed-del", nil, map[string]string{"k": "1"})
	upd := h.createCM(h.ns, "fixed-upd", nil, map[string]string{"k": "1"})
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps"}

	b1 := h.startBridge(vars)
	c := startChurn(h.cs, h.ns, 40, 5*time.Millisecond, 2)
	defer c.stop()
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v, errors %v", c, c.stop())
	}
	b1.kill()
	t.Logf("bridge-1 killed after churn: %v", c)

	// While the bridge is down.
	h.deleteCM(h.ns, "fixed-del")
	upd = upd.DeepCopy()
	upd.Data["k"] = "2"
	upd = h.updateCM(upd)
	added := h.createCM(h.ns, "fixed-new", nil, map[string]string{"k": "1"})
	deletesBefore := c.deletes.Load()
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	t.Logf("while down: %d churn deletes; churn so far: %v", c.deletes.Load()-deletesBefore, c)

	b2 := h.startBridge(vars)
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	msgs, st := h.settle(c, typ, 2, "the second bridge's start-up snapshot")
	b2.stop()

	begins := ofType(msgs, contract.TypeSnapshotBegin, typ+".")
	if len(begins) != 2 {
		t.Fatalf("%d snapshots, want 2 (one per start):\n%s", len(begins), describe(begins))
	}
	sid2 := begins[1].Ext(contract.ExtSnapshotID)
	if sid2 == begins[0].Ext(contract.ExtSnapshotID) {
		t.Errorf("both starts used snapshot id %s", sid2)
	}

	// The delete made while the bridge was down is published at the
	// restart, with the last state the stream held and finalstateunknown,
	// before the new start-up snapshot's end.
	delSubj := h.cmSubject(h.ns, "fixed-del")
	dels := ofType(onSubject(msgs, delSubj), contract.TypeDeleted, "")
	if len(dels) != 1 || dels[0].Ext(contract.ExtResourceVersion) != del.ResourceVersion || dels[0].Ext(contract.ExtFinalStateUnknown) != "true" {
		t.Errorf("want one deleted event for %s at rv %s with finalstateunknown:\n%s", delSubj, del.ResourceVersion, describe(dels))
	} else if dels[0].Seq > ofType(msgs, contract.TypeSnapshotEnd, typ+".")[1].Seq {
		t.Errorf("the missed delete of %s came after the restart's snapshot end", delSubj)
	}
	if slices.Contains(st.Swept, delSubj+" "+del.ResourceVersion) {
		t.Errorf("%s was swept: its delete should have been published before the snapshot end", delSubj)
	}
	// The update and the create made while it was down are snapshot items
	// of the second start, not live events.
	for _, x := range []struct{ name, uid, rv string }{{"fixed-upd", string(upd.UID), upd.ResourceVersion}, {"fixed-new", string(added.UID), added.ResourceVersion}} {
		on := onSubject(msgs, h.cmSubject(h.ns, x.name))
		wantID := cmID(x.uid, x.rv, "snapshot.item/"+sid2)
		if !slices.ContainsFunc(on, func(m replay.Message) bool { return m.Event.ID() == wantID }) {
			t.Errorf("no snapshot item %s:\n%s", wantID, describe(on))
		}
		for _, m := range on {
			if typ := m.Event.Type(); (typ == contract.TypeAdded || typ == contract.TypeUpdated) && m.Ext(contract.ExtResourceVersion) == x.rv {
				t.Errorf("seq %d: %s for %s at rv %s, a change made while the bridge was down", m.Seq, typ, x.name, x.rv)
			}
		}
	}
	t.Logf("%d messages, %d swept at the restart: %v", len(msgs), len(st.Swept), st.Swept)
}

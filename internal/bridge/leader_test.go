package bridge

import (
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A standby's gate drops changes: nothing accumulates in the intake until
// the replica leads.
func TestGateDropsUntilOpen(t *testing.T) {
	in := intake.New(time.Now, noReports)
	g := &gate{next: in}
	g.Add(informers.Change{Verb: informers.Updated, Resource: benchPods, Object: fixtures.Pod(1, 2), OldObject: fixtures.Pod(1, 1)})
	if n := in.PendingObjects(); n != 0 {
		t.Errorf("closed gate: %d objects pending, want 0", n)
	}
	g.open.Store(true)
	g.Add(informers.Change{Verb: informers.Updated, Resource: benchPods, Object: fixtures.Pod(2, 2), OldObject: fixtures.Pod(2, 1)})
	if n := in.PendingObjects(); n != 1 {
		t.Errorf("open gate: %d objects pending, want 1", n)
	}
}

// A standby is ready once its caches synced, without snapshots.
func TestStandbyReadiness(t *testing.T) {
	m := metrics.New()
	cm := newTypeStatus("configmaps.v1", m, func() {})
	types := []*typeStatus{cm}
	if err := standbyReadiness(types, true, true); err == nil || err.Error() != "configmaps.v1: informer cache not synced (list or watch failing?)" {
		t.Errorf("standby readiness before sync = %v", err)
	}
	cm.setSynced()
	if err := standbyReadiness(types, true, true); err != nil {
		t.Errorf("synced standby readiness = %v", err)
	}
	if err := standbyReadiness(types, true, false); err == nil {
		t.Errorf("standby without NATS is ready")
	}
	if cm.snapshotted.Load() {
		t.Errorf("standby readiness marked the type snapshotted")
	}
	if err := readiness(types, true, true); err == nil {
		t.Errorf("a leader without its start-up snapshot is ready")
	}
}

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestLastPerSubjectAfterRestart: 2,000 objects; the bridge is SIGKILLed;
// 200 are deleted and 200 updated while it is down; it is started again.
// Then the last message per subject equals the apiserver's list, names and
// resourceVersions alike, and so does a full replay with mark-and-sweep.
func TestLastPerSubjectAfterRestart(t *testing.T) {
	const objects, deleted, updated = 2000, 200, 200
	h := newHarness(t)
	typ := h.cmType()
	createMany(t, h, objects)
	// The defaults (per-subject limit, tombstones with a TTL and roll-up):
	// "" removes the harness's full-history settings.
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "0",
		"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "", "BRIDGE_TOMBSTONE_TTL": ""}
	b1 := h.startBridge(vars)
	h.convergeTo(typ, func() map[string]string { return h.listConfigMaps(h.ns, metav1.ListOptions{}) }, nil)
	b1.kill()

	// While no bridge runs.
	ctx := context.Background()
	for i := range deleted {
		if err := h.cs.CoreV1().ConfigMaps(h.ns).Delete(ctx, fmt.Sprintf("cm-%04d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := deleted; i < deleted+updated; i++ {
		cm, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, fmt.Sprintf("cm-%04d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["k"] = "updated while down"
		h.updateCM(cm)
	}
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	if len(want) != objects-deleted {
		t.Fatalf("the apiserver lists %d configmaps, want %d", len(want), objects-deleted)
	}

	b2 := h.startBridge(vars)
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, func(s *replay.State) string {
		if s.Snapshots[typ] < 2 {
			return "the second start-up snapshot is not complete"
		}
		return ""
	})
	b2.stop()
	checkNoRegressions(t, st)
	checkUniqueIDs(t, msgs)

	last, err := h.lastPerSubject(typ + ".*.*")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffState(lastView(last), want); d != "" {
		t.Errorf("last message per subject differs from the apiserver's list: %s", d)
	}
	fsu := 0
	for _, m := range ofType(msgs, contract.TypeDeleted, typ+".") {
		if m.Ext(contract.ExtFinalStateUnknown) == "true" {
			fsu++
		}
	}
	if fsu != deleted {
		t.Errorf("%d deletes with finalstateunknown published at the restart, want %d", fsu, deleted)
	}
	t.Logf("%d messages; %d missed deletes published; %d swept by the replay", len(msgs), fsu, len(st.Swept))
}

// createMany creates n ConfigMaps cm-0000… in h's namespace, a few at a time.
func createMany(t *testing.T, h *harness, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}, Data: map[string]string{"k": "v"}}
			if _, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

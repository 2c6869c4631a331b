package consume_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// churn creates, updates and deletes ConfigMaps among names cm-000…
// from several goroutines until ops operations are done.
func (h *harness) churn(names, ops, workers int) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			cms := h.cs.CoreV1().ConfigMaps(h.ns)
			ctx := context.Background()
			for i := range ops / workers {
				name := fmt.Sprintf("cm-%03d", rnd.IntN(names))
				var err error
				switch rnd.IntN(4) {
				case 0:
					_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"w": fmt.Sprint(w)}}, metav1.CreateOptions{})
				case 1:
					err = cms.Delete(ctx, name, metav1.DeleteOptions{})
				default:
					var cm *corev1.ConfigMap
					if cm, err = cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
						cm.Data = map[string]string{"w": fmt.Sprint(w), "i": fmt.Sprint(i)}
						_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					}
				}
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// converge waits until every state holds what the apiserver lists.
func (h *harness) converge(states map[string]*consume.State) {
	h.t.Helper()
	cms, ws := h.listed()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var d string
		for name, st := range states {
			if x := diff(held(st.Indexer("configmaps")), cms); x != "" {
				d += name + ": " + x + "; "
			}
		}
		if d == "" {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the states do not hold the apiserver's list after 90s: %s", d)
		}
	}
	for name, st := range states {
		h.checkState(name, st, cms, ws)
	}
}

// TestStateUnderChurn: states follow a bridge that publishes changes and
// periodic snapshots while objects are created, updated and deleted from
// several goroutines; one state bootstraps in the middle of it. Every
// state arrives at the apiserver's list without a contract violation.
func TestStateUnderChurn(t *testing.T) {
	h := newHarness(t)
	h.ensureWidgetCRD()
	h.createConfigMaps(0, 100)
	h.launchBridge("configmaps; widgets.example.com", map[string]string{"BRIDGE_RESYNC_PERIOD": "1s"})
	states := map[string]*consume.State{}
	for _, mode := range modes {
		states[mode.String()+" from the start"] = h.startState(mode, nil)
	}
	done := make(chan error, 1)
	go func() { done <- h.churn(100, 3000, 4) }()
	for _, mode := range modes {
		states[mode.String()+" started under churn"] = h.startState(mode, nil)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.converge(states)
	for name, st := range states {
		s := st.Stats()
		t.Logf("%s: %d applied, %d swept, %d stale deletes, %d snapshots", name, s.Applied, s.Swept, s.StaleDeletes, s.Snapshots)
	}
}

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
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubebridge/kubebridge/pkg/consume"
)

// churn creates, updates and deletes ConfigMaps among names cm-000…
// from several goroutines until ops operations are done.
func (h *harness) churn(names, ops, workers int) error {
	source := func(w int) *rand.Rand { return rand.New(rand.NewPCG(uint64(w), 7)) }
	return h.churnWith(names, ops, workers, source, func(c churnStep) error {
		switch c.rnd.IntN(4) {
		case 0:
			return c.create(nil)
		case 1:
			return c.delete()
		default:
			return c.update(nil)
		}
	})
}

// churnStep is one change of a churn: the i-th of worker w, on the
// ConfigMap name.
type churnStep struct {
	ctx  context.Context
	cms  typedcorev1.ConfigMapInterface
	rnd  *rand.Rand
	name string
	w, i int
}

// create creates the ConfigMap with labels.
func (c churnStep) create(labels map[string]string) error {
	_, err := c.cms.Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: labels}, Data: map[string]string{"w": fmt.Sprint(c.w)}}, metav1.CreateOptions{})
	return err
}

func (c churnStep) delete() error {
	return c.cms.Delete(c.ctx, c.name, metav1.DeleteOptions{})
}

// update changes the ConfigMap's data, and what relabel (if any) changes.
func (c churnStep) update(relabel func(*corev1.ConfigMap)) error {
	cm, err := c.cms.Get(c.ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data = map[string]string{"w": fmt.Sprint(c.w), "i": fmt.Sprint(c.i)}
	if relabel != nil {
		relabel(cm)
	}
	_, err = c.cms.Update(c.ctx, cm, metav1.UpdateOptions{})
	return err
}

// churnWith runs ops changes, step each, on ConfigMaps among names
// cm-000… from workers goroutines, each drawing from its own source. A
// change that finds its object gone, already there or changed meanwhile is
// part of the churn; any other error ends it.
func (h *harness) churnWith(names, ops, workers int, source func(w int) *rand.Rand, step func(churnStep) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := churnStep{ctx: context.Background(), cms: h.cs.CoreV1().ConfigMaps(h.ns), rnd: source(w), w: w}
			for c.i = range ops / workers {
				c.name = fmt.Sprintf("cm-%03d", c.rnd.IntN(names))
				if err := step(c); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
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
	var d string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		d = ""
		for name, st := range states {
			if x := diff(held(st.Indexer("configmaps")), cms); x != "" {
				d += name + ": " + x + "; "
			}
		}
		return d == "", nil
	})
	if err != nil {
		h.t.Fatalf("the states do not hold the apiserver's list after 90s: %s", d)
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

package consume_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Changes to labelled ConfigMaps for the side-by-side test.

// createLabelled creates n ConfigMaps cm-000…, labelled parity even or
// odd by their number.
func (h *harness) createLabelled(from, n int) {
	h.t.Helper()
	for i := from; i < from+n; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"parity": parity(i)}},
			Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func parity(i int) string {
	if i%2 == 0 {
		return "even"
	}
	return "odd"
}

// labelChurn creates, updates (data and the parity label) and deletes
// ConfigMaps among names cm-000… from several goroutines until ops
// operations are done.
func (h *harness) labelChurn(seed uint64, names, ops, workers int) error {
	source := func(w int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(w))) }
	return h.churnWith(names, ops, workers, source, func(c churnStep) error {
		switch c.rnd.IntN(5) {
		case 0:
			return c.create(map[string]string{"parity": parity(c.rnd.IntN(2))})
		case 1:
			return c.delete()
		default:
			return c.update(func(cm *corev1.ConfigMap) {
				if c.rnd.IntN(3) == 0 {
					cm.Labels = map[string]string{"parity": parity(c.rnd.IntN(2))}
				}
			})
		}
	})
}

// changeWhileDown deletes, updates, relabels, creates, and deletes and
// creates again under the same name, while no bridge runs.
func (h *harness) changeWhileDown() {
	h.t.Helper()
	ctx := context.Background()
	cms := h.cs.CoreV1().ConfigMaps(h.ns)
	ignore := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
			h.t.Fatal(err)
		}
	}
	for i := range 5 {
		ignore(cms.Delete(ctx, fmt.Sprintf("cm-%03d", i), metav1.DeleteOptions{}))
	}
	for i := 5; i < 10; i++ {
		cm, err := cms.Get(ctx, fmt.Sprintf("cm-%03d", i), metav1.GetOptions{})
		if err != nil {
			ignore(err)
			continue
		}
		cm.Data = map[string]string{"while": "down"}
		cm.Labels = map[string]string{"parity": parity(len(cm.Labels["parity"]) + 1)} // even ↔ odd
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		ignore(err)
	}
	for i := 10; i < 13; i++ {
		name := fmt.Sprintf("cm-%03d", i)
		ignore(cms.Delete(ctx, name, metav1.DeleteOptions{}))
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"parity": "even"}}}, metav1.CreateOptions{})
		ignore(err)
	}
	h.createLabelled(100, 5)
}

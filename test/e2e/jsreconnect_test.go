package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// TestJSConsumerReconnects freezes the link between examples/js/consume.mjs
// and NATS while changes are made, waits until the server has written them
// into the frozen link, then cuts it. The example's consumer takes no
// acknowledgement, so the server never sends those again: the example
// must create its consumer again from the last message it applied when it
// reconnects (docs/consumers.md), and print the changes.
func TestJSConsumerReconnects(t *testing.T) {
	node, npm := jsTools(t)
	env := testenv.Get(t)
	h := newHarness(t)
	typ := h.cmType()
	dir := jsInstall(t, npm)

	cm := h.createCM(h.ns, "cm-0", nil, map[string]string{"k": "v"})
	for i := 1; i < 3; i++ {
		h.createCM(h.ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"k": "v"})
	}
	h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "0",
		"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "", "BRIDGE_TOMBSTONE_TTL": ""})
	h.waitLastPerSubject(typ, h.listConfigMaps(h.ns, metav1.ListOptions{}))

	link := startProxy(t, strings.TrimPrefix(env.NATSURL(), "nats://"))
	js := jsStart(t, node, dir, typ, "nats://"+link.Addr(), h.stream)
	js.waitLine(t, "the synced line", regexp.MustCompile(`^synced 3 objects$`))

	link.Pause()
	cm.Data["k"] = "v2"
	cm = h.updateCM(cm)
	h.deleteCM(h.ns, "cm-1")
	added := h.createCM(h.ns, "cm-3", nil, nil)
	h.waitLastPerSubject(typ, h.listConfigMaps(h.ns, metav1.ListOptions{}))
	h.waitDeliveredAll()
	link.Cut()
	link.Resume()
	link.Restore()

	js.waitEvent(t, "updated", h.ns+"/cm-0", cm.ResourceVersion, 3)
	js.waitEvent(t, "deleted", h.ns+"/cm-1", "", 2)
	js.waitEvent(t, "added", h.ns+"/cm-3", added.ResourceVersion, 3)
	t.Logf("JS consumer output:\n%s", js.output())
}

// waitDeliveredAll waits until every consumer of the harness's stream has
// been sent everything the stream holds of its filters (nothing pending,
// nothing unacknowledged).
func (h *harness) waitDeliveredAll() {
	h.t.Helper()
	var state string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, convergeTimeout, true, func(ctx context.Context) (bool, error) {
		s, err := h.js.Stream(ctx, h.stream)
		if err != nil {
			return false, err
		}
		lister := s.ListConsumers(ctx)
		n := 0
		for info := range lister.Info() {
			n++
			if info.NumPending > 0 {
				state = fmt.Sprintf("consumer %s has %d pending", info.Name, info.NumPending)
				return false, nil
			}
		}
		state = fmt.Sprintf("%d consumers", n)
		return n > 0, lister.Err()
	})
	if err != nil {
		h.t.Fatalf("waiting for the stream's consumers to be sent everything: %v (%s)", err, state)
	}
}

package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestNewDoesNoIO: New wires the bridge and asks nothing of the API server
// or of NATS; Run does (prepare). Here JetStream is not there at all, so a
// New that checked the stream would wait for it until ctx ended; and the
// bridge is sharded, so a New that built the informers would list the
// namespaces for its shard selector.
func TestNewDoesNoIO(t *testing.T) {
	s := natstest.Server(t, server.Options{})
	nc, _ := connect(t, s.ClientURL())
	cluster := newFakeCluster()
	h := newHealth()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := New(ctx, testConfig(t, map[string]string{"BRIDGE_SHARDS": "2", "BRIDGE_SHARD": "0"}), cluster.kube(), nc, withHealth(h))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if a := cluster.client.Actions(); len(a) != 0 {
		t.Errorf("New made %d requests to the API server (%v), want none", len(a), a)
	}
	if n := counterValue(t, h.metrics.JetStreamWaits); n != 0 {
		t.Errorf("New waited %v times for JetStream, want no request", n)
	}
	if b.stream != nil || len(b.sources) != 0 || b.selectors != nil {
		t.Error("New read the stream or built the informers: Run's prepare does")
	}
	if err := h.checks().Ready(); err == nil {
		t.Error("ready before Run prepared the bridge")
	}
}

// TestStartupWaitsForJetStream: NATS is up but JetStream is not (no
// responders). The bridge waits, counting the attempts, instead of exiting;
// once JetStream is there it creates the stream and publishes as usual.
func TestStartupWaitsForJetStream(t *testing.T) {
	store := t.TempDir()
	s := natstest.Server(t, server.Options{})
	nc, js := connect(t, s.ClientURL())
	cluster := newFakeCluster()
	cluster.create(t, cluster.configMap("default", "pre", nil))

	h := newHealth()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- Serve(ctx, testConfig(t, nil), cluster.kube(), nc, withHealth(h), WithReady(func() { close(ready) }))
	}()
	waits := func() float64 { return counterValue(t, h.metrics.JetStreamWaits) }
	// The condition runs on the test's goroutine: it may end the test.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("Serve returned while JetStream was unavailable: %v", err)
		default:
		}
		return waits() >= 2, nil
	}); err != nil {
		t.Fatalf("only %v failed attempts to reach JetStream in 30s", waits())
	}
	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: store}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve returned: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready 60s after JetStream was enabled")
	}
	msgs := waitFor(t, js, "the start-up snapshot", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) == 1 })
	if n := countType(msgs, contract.TypeSnapshotItem); n != 1 {
		t.Errorf("%d snapshot items, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v", err)
	}
}

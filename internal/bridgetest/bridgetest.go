package bridgetest

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// readyTimeout is how long Start waits for the start-up snapshots: the
// first bridge of a test binary waits for the apiserver's discovery too.
const readyTimeout = 90 * time.Second

// Run is one Serve of the bridge.
type Run struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned, with err
	err    error
	once   sync.Once
}

// Start runs Serve with the configuration vars describe, on top of what
// tests want unless they say otherwise: env's NATS, no resync, no HTTP
// server, a stream in memory. It waits until the start-up snapshots are
// stored. When the test ends Serve is stopped and waited for; its error
// counts only through Stop, as a test may stop it on purpose.
func Start(t testing.TB, env *testenv.Env, vars map[string]string) *Run {
	t.Helper()
	all := map[string]string{
		"NATS_URL": env.NATSURL(), "BRIDGE_RESYNC_PERIOD": "0", "BRIDGE_HTTP_ADDR": "off", "BRIDGE_STREAM_STORAGE": "memory",
	}
	maps.Copy(all, vars)
	cfg, err := config.Load(context.Background(), envconfig.MapLookuper(all))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := bridge.KubeFromREST(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, all["NATS_URL"])
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	r := &Run{t: t, cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		r.err = bridge.Serve(ctx, cfg, kube, nc, bridge.WithReady(func() { close(ready) }))
	}()
	t.Cleanup(func() { r.cancel(); _ = r.Wait(time.Minute) })
	select {
	case <-ready:
	case <-r.done:
		t.Fatalf("the bridge stopped before it was ready: %v", r.err)
	case <-time.After(readyTimeout):
		t.Fatalf("the bridge is not ready after %s", readyTimeout)
	}
	return r
}

// Wait waits until Serve returns and returns its error.
func (r *Run) Wait(timeout time.Duration) error {
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		return errors.New("bridge.Serve did not return")
	}
}

// Stop ends Serve, which must return no error. Only the first call
// reports.
func (r *Run) Stop() {
	r.t.Helper()
	r.once.Do(func() {
		r.cancel()
		if err := r.Wait(time.Minute); err != nil {
			r.t.Errorf("Serve: %v", err)
		}
	})
}

// JetStream returns a JetStream context on env's NATS, and deletes the
// test's stream when it ends.
func JetStream(t testing.TB, env *testenv.Env, stream string) jetstream.JetStream {
	t.Helper()
	_, js := natstest.JetStream(t, env.NATSURL())
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	return js
}

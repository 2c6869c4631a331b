package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
	"k8s.io/client-go/rest"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// bridgeChild is what a bridge mode's child starts the bridge from.
type bridgeChild struct {
	kind      *modeKind // its path, and whether it is sharded
	namespace string
	natsURL   string
	stream    string
	budget    string // BRIDGE_PUBLISH_BUFFER_BYTES; empty is the default
	shard     string // i/N, for a sharded mode
	// namespaces and named are the child's -namespaces and
	// -named-namespaces.
	namespaces int
	named      bool
	// pods is the child's -pods: the bridge watches Pods too.
	pods  bool
	rest  *rest.Config
	peaks *peaks
}

// runningBridge is a bridge started by bridgeChild.start.
type runningBridge struct {
	// stop ends the bridge and closes its NATS connection.
	stop func() error
	// gzip is whether the bridge asked the API server for gzip.
	gzip bool
	// gcPercent is the collector's target the bridge set.
	gcPercent int
}

// start runs the bridge as cmd/bridge does, until it is ready.
func (b bridgeChild) start(ctx context.Context) (runningBridge, error) {
	// As cmd/bridge does: DefaultGCPercent unless GOGC is set
	// (mode+gogc=N).
	gcPercent, _ := bridge.SetGCDefault(os.LookupEnv)
	env, err := b.env()
	if err != nil {
		return runningBridge{}, err
	}
	cfg, err := config.Load(ctx, envconfig.MapLookuper(env))
	if err != nil {
		return runningBridge{}, err
	}
	// The API server's client as cmd/bridge sets it up (compression
	// off unless BRIDGE_KUBE_COMPRESSION=true).
	brc := rest.CopyConfig(b.rest)
	bridge.ApplyKubeSettings(brc, cfg)
	kube, err := bridge.KubeFromREST(brc)
	if err != nil {
		return runningBridge{}, err
	}
	if b.kind.runs == bridgeDynamic {
		// Without a typed client NewSource falls back to the dynamic informer.
		kube = bridge.Kube{Clients: informers.Clients{Typed: nil, Dynamic: kube.Clients.Dynamic}, Discovery: kube.Discovery}
	}
	nc, err := sink.Connect(ctx, b.natsURL)
	if err != nil {
		return runningBridge{}, err
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan error, 1)
	listening := func(a net.Addr) {
		u := "http://" + a.String() + "/metrics"
		b.peaks.metricsURL.Store(&u)
	}
	go func() {
		done <- bridge.Serve(serveCtx, cfg, kube, nc, bridge.WithReady(func() { close(ready) }), bridge.WithListening(listening))
	}()
	select {
	case <-ready:
	case err := <-done:
		stopServe()
		nc.Close()
		return runningBridge{}, fmt.Errorf("bridge stopped before it was ready: %v", err)
	case <-time.After(10 * time.Minute):
		stopServe()
		nc.Close()
		return runningBridge{}, errors.New("bridge not ready after 10m")
	}
	stop := func() error {
		defer nc.Close()
		stopServe()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("bridge did not stop within 30s")
		}
	}
	return runningBridge{stop: stop, gzip: !brc.DisableCompression, gcPercent: gcPercent}, nil
}

// env is the bridge's configuration: the benchmark's settings, and any
// other BRIDGE_* variable of the environment, to try one
// (BRIDGE_PUBLISH_WINDOW=2048 go run ./hack/bench/versus ...). The
// benchmark's own settings win.
func (b bridgeChild) env() (map[string]string, error) {
	env := map[string]string{
		"BRIDGE_RESOURCES":      b.resources(""),
		"BRIDGE_NAMESPACES":     b.namespace,
		"BRIDGE_CLUSTER_NAME":   benchCluster,
		"NATS_URL":              b.natsURL,
		"BRIDGE_RESYNC_PERIOD":  "0",
		"BRIDGE_STREAM_NAME":    b.stream,
		"BRIDGE_SUBJECT_PREFIX": subjectPrefix(b.stream),
		// A port of its own, so runs never collide; /metrics is sampled.
		"BRIDGE_HTTP_ADDR": "127.0.0.1:0",
	}
	switch {
	case b.namespaces > 1 && b.named:
		env["BRIDGE_NAMESPACES"] = strings.Join(layout{namespaces: b.namespaces}.all(), ",")
	case b.namespaces > 1:
		// Every namespace, and the benchmark's objects only.
		env["BRIDGE_RESOURCES"] = b.resources(" | labels=" + benchLabel)
	}
	if b.kind.sharded {
		sh, err := contract.ParseShard(b.shard)
		if err != nil {
			return nil, err
		}
		env["BRIDGE_SHARDS"], env["BRIDGE_SHARD"] = strconv.Itoa(sh.Count), strconv.Itoa(sh.Index)
	}
	if b.budget != "" {
		env["BRIDGE_PUBLISH_BUFFER_BYTES"] = b.budget
	}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BRIDGE_") {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
	}
	if env["BRIDGE_CONFIG"] != "" {
		// A mode's rules file (mode+config=PATH) lists the resources.
		delete(env, "BRIDGE_RESOURCES")
	}
	return env, nil
}

// resources is BRIDGE_RESOURCES: the mode's objects (ConfigMaps, or
// Widgets), and the Pods with -pods, each with scope.
func (b bridgeChild) resources(scope string) string {
	objects := b.kind.objectKind().resource()
	if b.pods {
		return objects + scope + "; pods" + scope
	}
	return objects + scope
}

// benchCluster is the bridges' BRIDGE_CLUSTER_NAME.
const benchCluster = "bench"

// subjectPrefix is the BRIDGE_SUBJECT_PREFIX of the bridge publishing to
// stream, one of its own.
func subjectPrefix(stream string) string {
	return "versus." + strings.ToLower(token(strings.TrimPrefix(stream, "VERSUS_")))
}

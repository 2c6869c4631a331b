package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/netproxy"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// robustLease is the replicas' Lease: long enough that a link cut for a
// few seconds (the compaction fault) does not depose the leader, short
// enough that a takeover takes seconds.
var robustLease = struct{ duration, renewDeadline, retry string }{"8s", "6s", "1s"}

func newWorld(t *testing.T, env *testenv.Env, opts robustOptions) *world {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := testenv.StartNATSClusterWith(ctx, natsServerBin, t.TempDir(), testenv.NATSClusterOptions{Nodes: 3, PartitionableRoutes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	w := &world{t: t, opts: opts, env: env, cluster: cluster, rng: rand.New(rand.NewPCG(opts.seed, 1)), began: time.Now()}
	w.h = newHarnessOn(t, env, cluster.URL())
	w.leaseNamespace, w.leaseName = w.h.ns, "kubebridge-robustness"
	w.leaseDuration, _ = time.ParseDuration(robustLease.duration)
	w.types = robustTypes(w.h)
	w.rules = robustRules(w.types)
	return w
}

// start sets the run up: the custom resource, the history's watches,
// the traffic, and two replicas, each with links of its own (through
// proxies the nemesis controls) to every NATS node and to kube-apiserver.
func (w *world) start() {
	t, h := w.t, w.h
	h.ensureWidgetCRD()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := h.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: robustSyncNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var err error
	if w.hist, err = startHistorian(context.Background(), h.dyn, w.types); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.hist.close)
	config := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(config, []byte(robustConfig(w.types)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []string{"kubebridge-0", "kubebridge-1"} {
		w.replicas = append(w.replicas, &robustPod{pod: pod, vars: w.replicaVars(pod, config)})
	}
	w.tr, err = startTraffic(context.Background(), h.cs, h.dyn, w.types, trafficOptions{
		seed: w.opts.seed, rate: w.opts.rate, workers: 2, objects: w.opts.objects, bigBytes: 850_000, namespaceEvery: 1500,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.tr.stop)
	w.note("run starts: seed %d", w.opts.seed)
	if _, b := w.waitLeader(readyTimeout); b == nil {
		t.Fatalf("no pod leads within %v", readyTimeout)
	}
}

// replicaVars configure one pod: the run's configuration file,
// leader election, an R3 stream, snapshots every 30s, and its own links.
func (w *world) replicaVars(pod, config string) map[string]string {
	var urls []string
	for _, n := range w.cluster.Nodes {
		p := w.proxy(strings.TrimPrefix(n.ClientURL, "nats://"))
		w.natsLinks = append(w.natsLinks, p)
		urls = append(urls, "nats://"+p.Addr())
	}
	kube := w.proxy(strings.TrimPrefix(w.env.APIServerURL(), "https://"))
	w.kubeLinks = append(w.kubeLinks, kube)
	return map[string]string{
		"BRIDGE_CONFIG":               config,
		"BRIDGE_NAMESPACES":           "",
		"NATS_URL":                    strings.Join(urls, ","),
		"KUBECONFIG":                  w.h.kubeconfigVia(kube),
		"BRIDGE_LEADER_ELECTION":      "true",
		"BRIDGE_LEASE_NAMESPACE":      w.leaseNamespace,
		"BRIDGE_LEASE_NAME":           w.leaseName,
		"BRIDGE_LEASE_DURATION":       robustLease.duration,
		"BRIDGE_LEASE_RENEW_DEADLINE": robustLease.renewDeadline,
		"BRIDGE_LEASE_RETRY_PERIOD":   robustLease.retry,
		"BRIDGE_STREAM_REPLICAS":      "3",
		"BRIDGE_RESYNC_PERIOD":        "30s",
		"BRIDGE_LOG_VERBOSITY":        "6", // every change observed, withheld and published: a violation's story is in the logs
		"POD_NAME":                    pod,
	}
}

func (w *world) proxy(target string) *netproxy.Proxy {
	p, err := netproxy.New(target)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { p.Close() })
	return p
}

// finish ends the run: the traffic stops, a pod leads and catches up,
// and the stream is checked against the history; the report is written
// either way.
func (w *world) finish() {
	t := w.t
	w.note("nemesis done; traffic stops")
	w.tr.stop()
	for _, r := range w.replicas {
		r.held = false
	}
	_, leader := w.waitLeader(3 * time.Minute)
	if leader == nil {
		w.fail("no pod leads three minutes after the last fault")
	}
	var views []violation
	w.until(3*time.Minute, func() bool {
		views = w.resumable()
		return len(views) == 0
	})
	w.note("converged: %d differences left", len(views))
	msgs := w.h.mustRead()
	if err := w.hist.failed(); err != nil {
		w.fail("the history is incomplete: " + err.Error())
	}
	hist := w.hist.snapshot(w.tr.log())
	blind := w.blindSpans()
	violations := append(validateStreamBlind(msgs, hist, w.rules, blind), views...)
	rep := w.report(msgs, hist, violations)
	for typ, tally := range reliableTallies(msgs, hist, w.rules, blind) {
		t.Logf("robustness: how %s's changes reached the stream: %v", typ, tally)
	}
	t.Logf("robustness: %s", rep.summary())
	if len(violations) > 0 {
		t.Fatalf("robustness: %d violations (seed %d); report, timeline and plot in %s", len(violations), w.opts.seed, w.opts.reportDir)
	}
	for _, r := range w.replicas {
		if r.b != nil && !r.b.exited() {
			r.b.stop()
		}
	}
}

// fail ends the run with the report written.
func (w *world) fail(why string) {
	w.t.Helper()
	w.report(nil, w.hist.snapshot(w.tr.log()), nil)
	w.t.Fatalf("robustness (seed %d): %s; timeline in %s", w.opts.seed, why, w.opts.reportDir)
}

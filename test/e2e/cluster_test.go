package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// startNATSCluster starts a cluster of n nats-server processes for the
// test, their routes over mutual TLS and their client ports serving TLS
// with pki's certificates; it is killed when the test ends.
func startNATSCluster(t *testing.T, n int, pki *natsPKI) *testenv.NATSCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := testenv.StartNATSClusterWith(ctx, natsServerBin, dir, testenv.NATSClusterOptions{Nodes: n, RouteTLS: pki.routeTLS(), ClientTLS: pki.clientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, node := range c.Nodes {
				t.Logf("==== nats-server %s (%s), last lines:\n%s", node.Name, node.Log(), lastLines(node.Log(), 40))
			}
		}
	})
	return c
}

// TestReplicatedStream runs the bridge on a 3-node NATS cluster with an
// R3 stream while ConfigMaps churn; the routes are mutual TLS, and the
// bridge and the test's reader connect over TLS. It SIGKILLs the node leading the stream
// and starts it again; then it SIGKILLs two nodes, so the stream has no
// quorum for 20s, and starts them again. Publishing waits and retries
// meanwhile, liveness holds, and it resumes when quorum returns. At the
// end nothing is lost (every change the bridge saw is published, merged or
// superseded), no event id is stored twice, and both the replay and the
// last message per subject equal the apiserver's list.
func TestReplicatedStream(t *testing.T) {
	// Its own NATS, namespaces and names: it runs beside the others
	// that do (testenv's shared NATS is not touched).
	t.Parallel()
	if testing.Short() {
		t.Skip("elections and a 20s loss of quorum")
	}
	env := testenv.Get(t)
	pki := newNATSPKI(t)
	cluster := startNATSCluster(t, 3, pki)
	h := newHarnessOn(t, env, cluster.URL(), pki.readerOpts()...)
	typ := h.cmType()
	const names = 150
	h.createManyWith(names, func(i int) string { return churnName("churn-", i) }, 256)
	b := h.startBridge(pki.bridgeEnv(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_STREAM_REPLICAS": "3", "BRIDGE_RESYNC_PERIOD": "0"}))

	c := startChurnWith(h.cs, h.ns, churnOptions{names: names, workers: 2, pause: 10 * time.Millisecond, seed: 15, filler: 256})
	defer c.stop()
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}

	// 1. The stream's leader goes away, and comes back.
	leader := h.streamLeader()
	node := cluster.Node(leader)
	killed := time.Now()
	node.Kill()
	stall := b.waitPublishedAfter(killed, time.Minute)
	t.Logf("SIGKILL of %s, the stream's leader: the next acknowledgement %v later; new leader %s", leader, stall.Round(time.Millisecond), h.streamLeader())
	// The stream moves on without the node, which has to catch up when
	// it is back.
	b.waitPublished(100, time.Minute)
	h.startNode(node)
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}

	// 2. Two nodes go away: no quorum for 20s.
	var down []*testenv.NATSProcess
	for _, n := range cluster.Nodes {
		if len(down) < 2 && n.Name != h.streamLeader() {
			down = append(down, n)
		}
	}
	for _, n := range down {
		n.Kill()
	}
	lostAt, opsAtLoss := time.Now(), c.ops()
	before := b.scrape().sum("kubebridge_events_published_total")
	// The outage lasts 20s, the behaviour under test; liveness is read
	// each second meanwhile.
	err := throughout(20*time.Second, time.Second, func() error {
		if b.exited() {
			return fmt.Errorf("the bridge exited without quorum: %v", b.state)
		}
		if code, body, err := b.get("/healthz"); err != nil || code != 200 {
			return fmt.Errorf("/healthz without quorum: HTTP %d %q (%v): the pod would be restarted", code, body, err)
		}
		return nil
	})
	if err != nil && b.exited() {
		t.Fatal(err)
	} else if err != nil {
		t.Error(err)
	}
	during := c.ops() - opsAtLoss
	restored := time.Now()
	for _, n := range down {
		h.startNode(n)
	}
	resumed := b.waitPublishedAfter(restored, 2*time.Minute)
	t.Logf("no quorum for %v (%v published meanwhile, %d changes made); after the restart of %s and %s the next acknowledgement came %v later",
		restored.Sub(lostAt).Round(time.Millisecond), b.scrape().sum("kubebridge_events_published_total")-before, during, down[0].Name, down[1].Name, resumed.Round(time.Millisecond))
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}

	_, st := h.settle(c, typ, 1, "the start-up snapshot")
	acct := b.waitNoneDropped(cmResource, convergeTimeout)
	t.Logf("accounting: %v; %d objects", acct, len(stateOf(st, typ)))
	m := b.scrape()
	t.Logf("lag from change to acknowledgement over the run (kubebridge_event_lag_seconds): p50 %s, p99 %s, of %v events",
		m.quantile("kubebridge_event_lag_seconds", 0.5, "resource", cmResource), m.quantile("kubebridge_event_lag_seconds", 0.99, "resource", cmResource),
		m.sum("kubebridge_event_lag_seconds_count", "resource", cmResource))
	h.checkLastPerSubject(typ)
	if b.exited() {
		t.Fatalf("the bridge exited: %v", b.state)
	}
}

// streamLeader is the server name of the harness stream's leader.
func (h *harness) streamLeader() string {
	h.t.Helper()
	var leader string
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := h.js.Stream(ctx, h.stream)
		if err != nil {
			last = err
			return false, nil
		}
		info, err := s.Info(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		if info.Cluster != nil {
			leader = info.Cluster.Leader
		}
		return leader != "", nil
	})
	if err != nil {
		h.t.Fatalf("stream %s has no leader after a minute (last error: %v)", h.stream, last)
	}
	return leader
}

// startNode starts a killed node again.
func (h *harness) startNode(n *testenv.NATSProcess) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// waitPublishedAfter waits until the bridge reports an acknowledgement
// after since and returns how long after since it came.
func (b *bridge) waitPublishedAfter(since time.Time, timeout time.Duration) time.Duration {
	b.h.t.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		at = time.Unix(0, int64(b.scrape().sum("kubebridge_last_publish_timestamp_seconds")*1e9))
		return at.After(since), nil
	})
	if err != nil {
		b.h.t.Fatalf("%s: no acknowledgement within %v after %v (the last at %v)", b.name, timeout, since, at)
	}
	return at.Sub(since)
}

// waitPublishedSettled waits until what the bridge had in flight is
// acknowledged or failed: its count of published events no longer moves
// between two scrapes a second apart. It returns that count.
func (b *bridge) waitPublishedSettled(timeout time.Duration) float64 {
	b.h.t.Helper()
	prev := b.scrape().sum("kubebridge_events_published_total")
	var now float64
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, false, func(context.Context) (bool, error) {
		now = b.scrape().sum("kubebridge_events_published_total")
		settled := now == prev
		prev = now
		return settled, nil
	})
	if err != nil {
		b.h.t.Fatalf("%s: events still published %v after its link was cut (%v so far)", b.name, timeout, now)
	}
	return now
}

// waitPublished waits until the bridge has published n more events than
// it had when called.
func (b *bridge) waitPublished(n float64, timeout time.Duration) {
	b.h.t.Helper()
	start := b.scrape().sum("kubebridge_events_published_total")
	var got float64
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got = b.scrape().sum("kubebridge_events_published_total") - start
		return got >= n, nil
	})
	if err != nil {
		b.h.t.Fatalf("%s: %v events published within %v, want %v", b.name, got, timeout, n)
	}
}

// lastLines returns the last n lines of the file at path.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

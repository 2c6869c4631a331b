package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// startNATSCluster starts a 3-node NATS cluster of nats-server processes
// for the test; it is killed when the test ends.
func startNATSCluster(t *testing.T, n int) *testenv.NATSCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := testenv.StartNATSCluster(ctx, natsServerBin, dir, n, "")
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
// R3 stream while ConfigMaps churn. It SIGKILLs the node leading the stream
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
	cluster := startNATSCluster(t, 3)
	h := newHarnessOn(t, env, cluster.URL())
	typ := h.cmType()
	const names = 150
	h.createManyWith(names, func(i int) string { return churnName("churn-", i) }, 256)
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_STREAM_REPLICAS": "3", "BRIDGE_RESYNC_PERIOD": "0"})

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
	time.Sleep(5 * time.Second)
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
	for time.Since(lostAt) < 20*time.Second {
		if code, body, err := b.get("/healthz"); err != nil || code != 200 {
			t.Errorf("/healthz without quorum: HTTP %d %q (%v): the pod would be restarted", code, body, err)
			break
		}
		if b.exited() {
			t.Fatalf("the bridge exited without quorum: %v", b.state)
		}
		time.Sleep(time.Second)
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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := h.js.Stream(ctx, h.stream)
		if err == nil {
			info, ierr := s.Info(ctx)
			err = ierr
			if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				cancel()
				return info.Cluster.Leader
			}
		}
		cancel()
		if time.Now().After(deadline) {
			h.t.Fatalf("stream %s has no leader after a minute: %v", h.stream, err)
		}
	}
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
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last := b.scrape().sum("kubebridge_last_publish_timestamp_seconds")
		at := time.Unix(0, int64(last*1e9))
		if at.After(since) {
			return at.Sub(since)
		}
	}
	b.h.t.Fatalf("%s: no acknowledgement within %v after %v", b.name, timeout, since)
	return 0
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

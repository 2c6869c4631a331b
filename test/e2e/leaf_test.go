package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/netproxy"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// leafTopology is a hub nats-server holding JetStream (domain hub) and one
// leaf nats-server per cluster, without JetStream, linked to the hub
// through a proxy each (to cut the link): the bridges publish into the
// hub's stream through their leaf, reaching its JetStream API through the
// domain (NATS_JS_DOMAIN=hub; docs/multicluster.md). As there, every link
// is TLS: the leaf node links mutual TLS (the hub verifies the leaves'
// certificates), and every client port serves TLS.
type leafTopology struct {
	hub      *testenv.NATSProcess
	leaves   map[string]*testenv.NATSProcess
	links    map[string]*netproxy.Proxy
	leafAddr string // the hub's leaf node port
}

func startLeafTopology(t *testing.T, pki *natsPKI, clusters ...string) *leafTopology {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	client, monitor, leafPort := natstest.FreePort(t), natstest.FreePort(t), natstest.FreePort(t)
	hub, err := testenv.StartNATSProcess(ctx, natsServerBin, dir, "hub", fmt.Sprintf(`server_name: hub
listen: %q
tls { cert_file: %q, key_file: %q }
http: %q
jetstream { store_dir: %q, domain: hub }
# The leaves know the hub only through their proxy (no other URL to
# reconnect to when the proxy cuts the link).
leafnodes {
  listen: %q
  no_advertise: true
  tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }
}
`, addr(client), pki.server.CertFile, pki.server.KeyFile, addr(monitor), dir+"/hub-store", addr(leafPort), pki.peer.CertFile, pki.peer.KeyFile, pki.ca.File), client, monitor)
	if err != nil {
		t.Fatal(err)
	}
	hub.ClientURL = tlsURL(hub.ClientURL)
	t.Cleanup(func() {
		hub.Kill()
		if t.Failed() {
			t.Logf("==== hub's log, last lines:\n%s", lastLines(hub.Log(), 30))
		}
	})
	top := &leafTopology{hub: hub, leaves: map[string]*testenv.NATSProcess{}, links: map[string]*netproxy.Proxy{}, leafAddr: addr(leafPort)}
	for _, c := range clusters {
		link := startProxy(t, addr(leafPort))
		client, monitor := natstest.FreePort(t), natstest.FreePort(t)
		leaf, err := testenv.StartNATSProcess(ctx, natsServerBin, dir, "leaf-"+c, fmt.Sprintf(`server_name: %q
listen: %q
tls { cert_file: %q, key_file: %q }
http: %q
leafnodes {
  reconnect: "1s"
  remotes: [ {
    url: "tls://%s"
    tls { cert_file: %q, key_file: %q, ca_file: %q }
  } ]
}
`, "leaf-"+c, addr(client), pki.server.CertFile, pki.server.KeyFile, addr(monitor), link.Addr(), pki.peer.CertFile, pki.peer.KeyFile, pki.ca.File), client, monitor)
		if err != nil {
			t.Fatal(err)
		}
		leaf.ClientURL = tlsURL(leaf.ClientURL)
		t.Cleanup(func() {
			leaf.Kill()
			if t.Failed() {
				t.Logf("==== leaf-%s's log, last lines:\n%s", c, lastLines(leaf.Log(), 30))
			}
		})
		top.leaves[c], top.links[c] = leaf, link
	}
	return top
}

// TestClustersThroughLeafNodes runs two clusters (two apiservers) into one
// stream, the way users connect them: each bridge, with its own
// BRIDGE_CLUSTER_NAME, publishes through a leaf nats-server of its own to
// the hub that holds the stream. Both clusters churn, and cluster a's leaf
// loses its link to the hub for 30s. Checked: nothing is lost and no id is
// stored twice; each cluster's state, read from the one stream filtered by
// cluster (the reference consumer, pkg/consume and kubebridge verify
// --cluster), equals its own apiserver; neither bridge is fenced, and with
// the term rule applied per cluster no event is skipped, where one rule
// for the whole stream would skip events of the cluster whose term is the
// lower.
func TestClustersThroughLeafNodes(t *testing.T) {
	// Its own NATS, namespaces and names: it runs beside the others
	// that do (testenv's shared NATS is not touched).
	t.Parallel()
	if testing.Short() {
		t.Skip("a second apiserver, and a 30s cut")
	}
	envA := testenv.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	envB, err := testenv.Start(ctx, testenv.Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { envB.Close() })
	pki := newNATSPKI(t)
	top := startLeafTopology(t, pki, "a", "b")
	if !requiresTLS(t, top.leafAddr) {
		t.Error("the hub's leaf node port does not require TLS")
	}

	// The tests read the stream at the hub; each bridge runs on its leaf.
	ha := newHarnessOn(t, envA, top.hub.ClientURL, pki.readerOpts()...)
	hb := newHarnessOn(t, envB, top.hub.ClientURL, pki.readerOpts()...)
	ha.natsCA, hb.natsCA = pki.ca.File, pki.ca.File
	ha.cluster, hb.cluster = "a", "b"
	ha.natsURL, hb.natsURL = top.leaves["a"].ClientURL, top.leaves["b"].ClientURL
	hb.prefix, hb.stream = ha.prefix, ha.stream // one stream
	const names = 100
	vars := pki.bridgeEnv(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "0", "NATS_JS_DOMAIN": "hub"})
	for _, h := range []*harness{ha, hb} {
		h.createManyWith(names, func(i int) string { return churnName("churn-", i) }, 128)
	}
	ba := ha.startBridge(vars)
	bb := hb.startBridge(vars)
	ca := startChurnWith(ha.cs, ha.ns, churnOptions{names: names, pause: 10 * time.Millisecond, seed: 21, filler: 128})
	defer ca.stop()
	cb := startChurnWith(hb.cs, hb.ns, churnOptions{names: names, pause: 10 * time.Millisecond, seed: 22, filler: 128})
	defer cb.stop()
	if !ca.waitOps(100, time.Minute) || !cb.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v, %v", ca, cb)
	}

	top.links["a"].Cut()
	cutAt, opsA, opsB := time.Now(), ca.ops(), cb.ops()
	publishedA := ba.waitPublishedSettled(10 * time.Second)
	// The cut lasts 30s, the behaviour under test; liveness is read each
	// second meanwhile.
	err = throughout(30*time.Second-time.Since(cutAt), time.Second, func() error {
		if code, body, err := ba.get("/healthz"); err != nil || code != 200 {
			return fmt.Errorf("cluster a's bridge while its leaf is cut off: /healthz HTTP %d %q (%v)", code, body, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if n := ba.scrape().sum("kubebridge_events_published_total") - publishedA; n > 0 {
		t.Errorf("cluster a's bridge published %v events while its leaf was cut off from the hub: the cut did not cut", n)
	}
	top.links["a"].Restore()
	t.Logf("leaf a cut off from the hub for %v: %d changes in cluster a, %d in cluster b meanwhile", time.Since(cutAt).Round(time.Millisecond), ca.ops()-opsA, cb.ops()-opsB)
	resumed := ba.waitPublishedAfter(time.Now(), 2*time.Minute)
	t.Logf("cluster a's bridge published again %v after the link came back", resumed.Round(time.Millisecond))
	if !ca.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v", ca)
	}

	for _, x := range []struct {
		h *harness
		c *churn
		b *bridge
	}{{ha, ca, ba}, {hb, cb, bb}} {
		_, st := x.h.settle(x.c, x.h.cmType(), 1, "the start-up snapshot")
		acct := x.b.waitNoneDropped(cmResource, convergeTimeout)
		if len(st.Fenced) > 0 || x.b.exited() {
			t.Errorf("cluster %s: %d events skipped as fenced, bridge exited %v: the other cluster's terms interfered", x.h.cluster, len(st.Fenced), x.b.exited())
		}
		t.Logf("cluster %s: %v; %d objects", x.h.cluster, acct, len(stateOf(st, x.h.cmType())))
		x.h.checkLastPerSubject(x.h.cmType())
		x.h.checkClusterReaders()
	}
	checkTermsPerCluster(t, ha)
}

// checkClusterReaders: pkg/consume and kubebridge verify --cluster, on the
// one stream, give the harness's cluster's objects.
func (h *harness) checkClusterReaders() {
	t := h.t
	t.Helper()
	client, err := consume.New(h.js, consume.WithStream(h.stream), consume.WithSubjectPrefix(h.prefix), consume.WithCluster(h.cluster))
	must(t, err)
	st, err := client.NewState([]consume.Filter{{Resource: "configmaps", Namespace: h.ns}})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = st.Run(ctx) }()
	must(t, st.WaitForSync(ctx))
	got := map[string]string{}
	for _, o := range st.Indexer("configmaps").List() {
		m := o.(metav1.Object)
		got[h.cmSubject(m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
	}
	if d := diffState(got, h.listConfigMaps(h.ns, metav1.ListOptions{})); d != "" {
		t.Errorf("cluster %s: pkg/consume's state differs from its apiserver:\n%s", h.cluster, d)
	}
	var out, errOut bytes.Buffer
	args := []string{"verify", "-s", h.nc.ConnectedUrl(), "--stream", h.stream, "--prefix", h.prefix, "--cluster", h.cluster,
		"--against-cluster", "--kubeconfig", h.env.KubeconfigPath(), "-n", h.ns, "configmaps"}
	if h.natsCA != "" {
		args = append(args, "--tlsca", h.natsCA)
	}
	if code := cli.Run(ctx, args, &out, &errOut); code != 0 {
		t.Errorf("kubebridge verify --cluster %s: exit %d\n%s%s", h.cluster, code, out.String(), errOut.String())
	}
}

// checkTermsPerCluster reads the whole stream, both clusters' messages in
// stream order, and applies the term rule per cluster, as README says: no
// event is skipped. It also counts what one rule for the whole stream
// (the highest term of any cluster) would have skipped, to show why.
func checkTermsPerCluster(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := replay.ReadAll(ctx, h.js, h.stream, "")
	must(t, err)
	perCluster := map[string]uint64{}
	var global uint64
	var skippedPer, skippedGlobal int
	for _, m := range msgs {
		c := m.Ext(contract.ExtCluster)
		if m.Event.Type() == contract.TypeTerm {
			perCluster[c] = max(perCluster[c], m.Seq)
			global = max(global, m.Seq)
			continue
		}
		term, err := contract.TermOf(m.Header)
		must(t, err)
		if term < perCluster[c] {
			skippedPer++
		}
		if term < global {
			skippedGlobal++
		}
		perCluster[c], global = max(perCluster[c], term), max(global, term)
	}
	if skippedPer > 0 {
		t.Errorf("with the term rule per cluster, %d of %d messages would be skipped: the clusters' terms interfere", skippedPer, len(msgs))
	}
	t.Logf("%d messages of two clusters in one stream: the term rule per cluster skips none; one rule for the whole stream would skip %d", len(msgs), skippedGlobal)
}

package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// TestNATSClusterPartition partitions node n2 of a 3-node cluster with
// partitionable routes, twice (the second time after the routes came
// back, which is when gossip would have made routes around the proxies):
// n2 has no route left, n0 and n1 still route with each other, and an R3
// stream takes messages through n0 but not through n2; after Heal all
// three route with each other again and n2 takes messages too. It needs
// no kube binaries, only the nats-server it builds.
func TestNATSClusterPartition(t *testing.T) {
	ctx, dir, bin := clusterSetup(t)
	c, err := testenv.StartNATSClusterWith(ctx, bin, dir, testenv.NATSClusterOptions{Nodes: 3, PartitionableRoutes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, n := range c.Nodes {
				b, _ := os.ReadFile(n.Log())
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("==== nats-server %s, last lines:\n%s", n.Name, strings.Join(lines[max(len(lines)-30, 0):], "\n"))
			}
		}
	})
	waitRoutes(t, ctx, c, map[string][]string{"n0": {"n1", "n2"}, "n1": {"n0", "n2"}, "n2": {"n0", "n1"}})

	js0 := jetStreamOn(t, c.Node("n0"))
	js2 := jetStreamOn(t, c.Node("n2"))
	// Routes up is not yet the meta leader seeing every peer online: until
	// it does, an R3 stream is refused ("no suitable peers for placement").
	retry(t, ctx, "create the R3 stream PARTITION", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := js0.CreateStream(ctx, jetstream.StreamConfig{Name: "PARTITION", Subjects: []string{"partition.>"}, Replicas: 3})
		return err
	})
	for round := range 2 {
		if err := c.Partition("n2"); err != nil {
			t.Fatal(err)
		}
		waitRoutes(t, ctx, c, map[string][]string{"n0": {"n1"}, "n1": {"n0"}, "n2": nil})
		retry(t, ctx, fmt.Sprintf("round %d: publish through n0, n2 partitioned", round), 100*time.Millisecond, func(ctx context.Context) error {
			_, err := js0.Publish(ctx, "partition.majority", []byte("majority"))
			return err
		})
		minority, cancelMinority := context.WithTimeout(ctx, 2*time.Second)
		_, err := js2.Publish(minority, "partition.minority", []byte("minority"))
		cancelMinority()
		if err == nil {
			t.Fatalf("round %d: publish through n2 succeeded while n2 was partitioned", round)
		}

		if err := c.Heal("n2"); err != nil {
			t.Fatal(err)
		}
		waitRoutes(t, ctx, c, map[string][]string{"n0": {"n1", "n2"}, "n1": {"n0", "n2"}, "n2": {"n0", "n1"}})
		retry(t, ctx, fmt.Sprintf("round %d: publish through n2, healed", round), 100*time.Millisecond, func(ctx context.Context) error {
			_, err := js2.Publish(ctx, "partition.healed", []byte("healed"))
			return err
		})
	}
	if err := c.Partition("n9"); err == nil {
		t.Error("Partition of a node the cluster does not have succeeded")
	}
}

// clusterSetup skips in -short mode, and otherwise builds nats-server into
// a directory of the test's: a context for the test, the directory and
// the binary.
func clusterSetup(t *testing.T) (context.Context, string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds nats-server and runs a 3-node cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	bin, err := testenv.BuildNATSServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, dir, bin
}

func jetStreamOn(t *testing.T, n *testenv.NATSProcess) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(n.ClientURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// waitRoutes waits until each node's /routez names exactly the peers
// want gives it (none: no route at all).
func waitRoutes(t *testing.T, ctx context.Context, c *testenv.NATSCluster, want map[string][]string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	got := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		done := true
		for name, peers := range want {
			routed, err := routedPeers(ctx, client, c.Node(name).MonitorURL)
			if err != nil {
				return false, nil
			}
			got[name] = routed
			done = done && slices.Equal(routed, peers)
		}
		return done, nil
	})
	if err != nil {
		t.Fatalf("routes: got %v, want %v (%v)", got, want, err)
	}
}

// routedPeers is the sorted names of the servers a node's /routez lists
// (a route per connection of the pool: a name once), nil when
// num_routes is 0.
func routedPeers(ctx context.Context, client *http.Client, monitorURL string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, monitorURL+"/routez", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var routez struct {
		NumRoutes int `json:"num_routes"`
		Routes    []struct {
			RemoteName string `json:"remote_name"`
		} `json:"routes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&routez); err != nil {
		return nil, err
	}
	if routez.NumRoutes == 0 {
		return nil, nil
	}
	var peers []string
	for _, r := range routez.Routes {
		peers = append(peers, r.RemoteName)
	}
	slices.Sort(peers)
	return slices.Compact(peers), nil
}

package testenv_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/internal/testpki"
)

// TestNATSClusterTLS starts a 3-node cluster with mutual TLS on its routes
// and TLS on its client ports: the nodes route with each other, each
// says (/varz) that its route port requires and verifies TLS, an R3
// stream takes a message from a client that trusts the CA, and a client
// that does not is refused.
func TestNATSClusterTLS(t *testing.T) {
	ctx, dir, bin := clusterSetup(t)
	ca := testpki.NewCA(t, dir, "ca")
	route := ca.Issue(t, dir, "route", testpki.Leaf{CommonName: "route", Peer: true})
	server := ca.Issue(t, dir, "server", testpki.Leaf{CommonName: "nats", Server: true})
	c, err := testenv.StartNATSClusterWith(ctx, bin, dir, testenv.NATSClusterOptions{Nodes: 3,
		RouteTLS:  &testenv.TLSFiles{CA: ca.File, Cert: route.CertFile, Key: route.KeyFile},
		ClientTLS: &testenv.TLSFiles{Cert: server.CertFile, Key: server.KeyFile}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitRoutes(t, ctx, c, map[string][]string{"n0": {"n1", "n2"}, "n1": {"n0", "n2"}, "n2": {"n0", "n1"}})
	for _, n := range c.Nodes {
		if v := clusterVarz(t, ctx, n.MonitorURL); !v.TLSRequired || !v.TLSVerify {
			t.Errorf("%s's route port: tls_required %v, tls_verify %v; want both", n.Name, v.TLSRequired, v.TLSVerify)
		}
	}

	nc, err := nats.Connect(c.URL(), nats.RootCAs(ca.File))
	if err != nil {
		t.Fatalf("a client that trusts the CA: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Routes up is not yet the meta leader seeing every peer online: until
	// it does, an R3 stream is refused ("no suitable peers for placement").
	retry(t, ctx, "create the R3 stream TLS", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TLS", Subjects: []string{"tls.>"}, Replicas: 3})
		return err
	})
	retry(t, ctx, "publish to the R3 stream over TLS", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := js.Publish(ctx, "tls.one", []byte("over TLS"))
		return err
	})
	if nc, err := nats.Connect(c.Nodes[0].ClientURL, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("a client that does not trust the CA connected")
	}
}

// clusterVarz is the cluster part of a node's /varz.
func clusterVarz(t *testing.T, ctx context.Context, monitorURL string) (v struct {
	TLSRequired bool `json:"tls_required"`
	TLSVerify   bool `json:"tls_verify"`
}) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, monitorURL+"/varz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var varz struct {
		Cluster json.RawMessage `json:"cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&varz); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(varz.Cluster, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

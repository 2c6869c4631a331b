package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/testpki"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// The bridge, configured by the NATS_TLS_ variables, publishes to a
// nats-server that requires mutual TLS, and a consumer with a certificate
// of its own reads the event back with pkg/consume.
func TestBridgeAndConsumerOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "ca")
	srvPair := ca.Issue(t, dir, "server", testpki.Leaf{CommonName: "nats", Server: true})
	tlsCfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvPair.CertFile, KeyFile: srvPair.KeyFile, CaFile: ca.File, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.Server(t, server.Options{JetStream: true, TLSConfig: tlsCfg, TLS: true, TLSVerify: true, TLSTimeout: 2})
	bridgePair := ca.Issue(t, dir, "bridge", testpki.Leaf{CommonName: "bridge"})
	cfg := testConfig(t, map[string]string{"NATS_URL": srv.ClientURL(),
		"NATS_TLS_CA": ca.File, "NATS_TLS_CERT": bridgePair.CertFile, "NATS_TLS_KEY": bridgePair.KeyFile})

	opts, err := natsAuth(cfg).Options()
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc, err := sink.Connect(ctx, cfg.NATSURL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cluster := newFakeCluster()
	startBridge(t, cfg, cluster.kube(), nc)
	cm := cluster.create(t, cluster.configMap("default", "over-tls", map[string]string{"k": "v"}))

	consumerPair := ca.Issue(t, dir, "consumer", testpki.Leaf{CommonName: "consumer"})
	copts, err := sink.Auth{CAFile: ca.File, CertFile: consumerPair.CertFile, KeyFile: consumerPair.KeyFile}.Options()
	if err != nil {
		t.Fatal(err)
	}
	cnc, err := nats.Connect(srv.ClientURL(), copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cnc.Close)
	js, err := jetstream.New(cnc)
	if err != nil {
		t.Fatal(err)
	}
	client, err := consume.New(js, consume.WithCluster("test"))
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range client.Events(ctx, []consume.Filter{{Resource: "configmaps", Namespace: "default", Name: "over-tls"}}, consume.DeliverAll()) {
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ev.Object.(*corev1.ConfigMap)
		if ok && got.UID == cm.UID && got.Data["k"] == "v" {
			return
		}
	}
	t.Fatal("the consumer's events ended without the ConfigMap")
}

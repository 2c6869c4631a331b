package bridge

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// natsServer is an in-process NATS server with JetStream that can be
// stopped and started again on the same port and store.
type natsServer struct {
	t     testing.TB
	port  int
	store string
	srv   *server.Server
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	n := &natsServer{t: t, port: natstest.FreePort(t), store: t.TempDir()}
	n.start()
	t.Cleanup(n.stop)
	return n
}

// startConnectedNATS starts NATS as startNATS does and connects to it.
func startConnectedNATS(t testing.TB) (*natsServer, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	n := startNATS(t)
	nc, js := connect(t, n.url())
	return n, nc, js
}

func (n *natsServer) start() {
	n.t.Helper()
	n.srv = natstest.Server(n.t, server.Options{Port: n.port, JetStream: true, StoreDir: n.store})
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *natsServer) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// fakeCluster is client-go's fake clientset with discovery filled in and
// resourceVersions assigned from one counter, as etcd would.
type fakeCluster struct {
	client *fake.Clientset
	rv     atomic.Int64
	mu     sync.Mutex
	uids   atomic.Int64
}

func newFakeCluster(objs ...runtime.Object) *fakeCluster {
	c := &fakeCluster{client: fake.NewClientset(objs...)}
	c.rv.Store(100)
	c.client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: []string{"get", "list", "watch"}},
			{Name: "bindings", SingularName: "binding", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		},
	}}
	return c
}

func (c *fakeCluster) kube() Kube {
	return Kube{Clients: informers.Clients{Typed: c.client}, Discovery: memory.NewMemCacheClient(c.client.Discovery())}
}

func (c *fakeCluster) nextRV() string { return strconv.FormatInt(c.rv.Add(1), 10) }

func (c *fakeCluster) configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%s-%d", ns, name, c.uids.Add(1))), ResourceVersion: c.nextRV()}, Data: data}
}

func (c *fakeCluster) create(t testing.TB, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	out, err := c.client.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *fakeCluster) update(t testing.TB, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cm = cm.DeepCopy()
	cm.ResourceVersion = c.nextRV()
	out, err := c.client.CoreV1().ConfigMaps(cm.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *fakeCluster) delete(t testing.TB, ns, name string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.client.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// state is the cluster's configmaps as subject → resourceVersion.
func (c *fakeCluster) state(t testing.TB, subjects contract.Subjects) map[string]string {
	t.Helper()
	list, err := c.client.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[subjects.Object(configMaps.Type(), cm.Namespace, cm.Name)] = cm.ResourceVersion
	}
	return out
}

var configMaps = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}

var testSubjects = contract.Subjects{Prefix: "kubebridge", Cluster: "test"}

// bridgeRun is a running Serve.
type bridgeRun struct {
	cancel context.CancelFunc
	done   chan error
	ready  chan struct{}
}

func testConfig(t testing.TB, env map[string]string) *config.Config {
	t.Helper()
	base := map[string]string{"BRIDGE_RESOURCES": "cm", "BRIDGE_CLUSTER_NAME": "test", "NATS_URL": "nats://127.0.0.1:4222", "BRIDGE_RESYNC_PERIOD": "0", "BRIDGE_STREAM_STORAGE": "memory", "BRIDGE_HTTP_ADDR": "127.0.0.1:0"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(context.Background(), envconfig.MapLookuper(base))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func startBridge(t testing.TB, cfg *config.Config, kube Kube, nc *nats.Conn) *bridgeRun {
	t.Helper()
	return startBridgeWith(t, cfg, kube, nc)
}

func startBridgeWith(t testing.TB, cfg *config.Config, kube Kube, nc *nats.Conn, opts ...Option) *bridgeRun {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	r := &bridgeRun{cancel: cancel, done: make(chan error, 1), ready: make(chan struct{})}
	opts = append(opts, WithReady(func() { close(r.ready) }))
	go func() { r.done <- Serve(ctx, cfg, kube, nc, opts...) }()
	t.Cleanup(func() { r.stop(t) })
	select {
	case <-r.ready:
	case err := <-r.done:
		t.Fatalf("bridge stopped before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("bridge not ready after 30s")
	}
	return r
}

func (r *bridgeRun) stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("Serve did not return within 60s of cancel")
	}
}

func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := sink.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, natstest.JetStreamOf(t, nc)
}

// waitFor polls the stream until cond holds for its messages.
func waitFor(t testing.TB, js jetstream.JetStream, what string, timeout time.Duration, cond func([]replay.Message) bool) []replay.Message {
	t.Helper()
	var msgs []replay.Message
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		// Each read has a timeout of its own: one that runs past the
		// wait's end still counts.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		msgs, err = replay.ReadAll(ctx, js, "KUBEBRIDGE", "")
		cancel()
		return err == nil && cond(msgs), nil
	}) != nil {
		t.Fatalf("timed out after %v waiting for %s (read %d messages, err %v)", timeout, what, len(msgs), err)
	}
	return msgs
}

func countType(msgs []replay.Message, typ string) int {
	n := 0
	for _, m := range msgs {
		if m.Event.Type() == typ {
			n++
		}
	}
	return n
}

package kustomize_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/natsconf"
	"github.com/kubebridge/kubebridge/internal/natstest"
)

// TestNATSOverTLS runs the three servers of overlays/with-nats in this
// process, each with the nats.conf it renders and the certificates
// hack/nats-certs.sh writes (listeners on 127.0.0.1, which the
// certificates name too): the routes join over mutual TLS, the bridge,
// with the TLS files its environment names, creates the stream replicated
// on all three and publishes, a reader with its own certificate reads the
// message back, and a client without TLS is refused.
func TestNATSOverTLS(t *testing.T) {
	var b *build
	for _, ok := range okBuilds(t) {
		if ok.name == "overlays/with-nats" {
			b = ok
		}
	}
	if b == nil {
		t.Fatal("overlays/with-nats does not build")
	}
	var ss *appsv1.StatefulSet
	for _, s := range ofType[*appsv1.StatefulSet](b) {
		if !runsBridge(&s.Spec.Template) {
			ss = s
		}
	}
	if ss == nil || ss.Spec.Replicas == nil {
		t.Fatal("overlays/with-nats has no NATS StatefulSet")
	}
	certs := natsCerts(t)
	servers := startTLSCluster(t, b, ss, certs, int(*ss.Spec.Replicas))

	u, files := bridgeTLSFiles(t, b, certs)
	if files == nil {
		t.FailNow()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(servers[0].Addr().(*net.TCPAddr).Port))
	natstest.CheckRefusesPlainText(t, addr, "kubebridge", "secret-kubebridge-nats-password")

	bridge := connectTLS(t, u.Scheme+"://"+addr, files["NATS_CA"], files["NATS_CERT"], files["NATS_KEY"], "kubebridge", "secret-kubebridge-nats-password")
	js, err := jetstream.New(bridge)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The JetStream cluster elects its meta leader over the routes first.
	var createErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, createErr = js.CreateStream(attempt, jetstream.StreamConfig{Name: "KUBEBRIDGE", Subjects: []string{"kubebridge.>"}, Replicas: len(servers)})
		return createErr == nil, nil
	}); err != nil {
		t.Fatalf("the bridge cannot create the stream with %d replicas: %v", len(servers), createErr)
	}
	const subject = "kubebridge.default.core.v1.configmaps.default.tls"
	if _, err := js.Publish(ctx, subject, []byte("over TLS")); err != nil {
		t.Fatalf("the bridge cannot publish: %v", err)
	}

	const reader = "kubebridge-nats-reader-tls"
	nc := connectTLS(t, "tls://"+addr, certs.File(reader, "ca.crt"), certs.File(reader, "tls.crt"), certs.File(reader, "tls.key"), "reader", "secret-kubebridge-nats-reader-password")
	rjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := rjs.Stream(ctx, "KUBEBRIDGE")
	if err != nil {
		t.Fatalf("the reader: %v", err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, subject)
	if err != nil || string(msg.Data) != "over TLS" {
		t.Fatalf("the reader reads %v, %v; want the bridge's message", msg, err)
	}
}

// startTLSCluster starts n servers of ss with the rendered nats.conf and
// the certificates in certs, on 127.0.0.1 (routes to <ss>-<i>.<service>
// go to server i), and waits until each has routes to all the others.
func startTLSCluster(t *testing.T, b *build, ss *appsv1.StatefulSet, certs natsconf.Certs, n int) []*server.Server {
	t.Helper()
	c := &ss.Spec.Template.Spec.Containers[0]
	clusterPorts := make([]int, n)
	for i := range clusterPorts {
		clusterPorts[i] = natstest.FreePort(t)
	}
	var servers []*server.Server
	for i := range n {
		o := natsConfig(t, b, ss, c, i, certs)
		o.Port, o.HTTPPort = natstest.FreePort(t), 0
		o.Cluster.Host, o.Cluster.Port = "127.0.0.1", clusterPorts[i]
		o.StoreDir = t.TempDir()
		for _, r := range o.Routes {
			host, _, _ := strings.Cut(r.Hostname(), ".")
			j, err := strconv.Atoi(strings.TrimPrefix(host, ss.Name+"-"))
			if err != nil || j < 0 || j >= n {
				t.Fatalf("route %s leads to no server", r)
			}
			r.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(clusterPorts[j]))
		}
		servers = append(servers, natstest.Server(t, *o))
	}
	var routes []string
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		routes = routes[:0]
		all := true
		for i, s := range servers {
			routes = append(routes, fmt.Sprintf("%s-%d: %d", ss.Name, i, s.NumRoutes()))
			all = all && s.NumRoutes() >= n-1
		}
		return all, nil
	}); err != nil {
		t.Fatalf("the servers' routes over TLS did not all connect: %v", routes)
	}
	return servers
}

// connectTLS connects to url with TLS (ca, a client certificate) and a
// password, and closes the connection when the test ends.
func connectTLS(t *testing.T, url, ca, cert, key, user, password string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.RootCAs(ca), nats.ClientCert(cert, key), nats.UserInfo(user, password))
	if err != nil {
		t.Fatalf("%s cannot connect to %s with TLS: %v", user, url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

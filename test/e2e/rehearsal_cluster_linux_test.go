package e2e

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubebridge/kubebridge/internal/config"
)

// startNATS serves the NATS server of the overlay's StatefulSet: its
// container's arguments parsed by nats-server's own command line parser,
// its data volume in a directory of the test's. The overlay's Services
// that select it lead to it: each Service port's target port, by name, is
// a container port of the StatefulSet, which is the client or the
// monitoring port of this server.
func (r *rehearsal) startNATS() {
	t := r.t
	t.Helper()
	sts, err := r.cs.AppsV1().StatefulSets(r.id).Get(r.ctx, "nats", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the overlay's NATS StatefulSet: %v", err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts, err := server.ConfigureOptions(fs, c.Args, func() {}, func() {}, func() {})
	if err != nil {
		t.Fatalf("nats-server %s: %v", strings.Join(c.Args, " "), err)
	}
	clientPort, monitorPort := opts.Port, opts.HTTPPort
	if clientPort == 0 {
		clientPort = server.DEFAULT_PORT
	}
	// The volumes the StatefulSet mounts are directories of the test.
	onVolume := false
	for _, vm := range c.VolumeMounts {
		if opts.StoreDir == vm.MountPath || strings.HasPrefix(opts.StoreDir, vm.MountPath+"/") {
			opts.StoreDir = filepath.Join(t.TempDir(), strings.TrimPrefix(opts.StoreDir, vm.MountPath))
			onVolume = true
		}
	}
	if !opts.JetStream || !onVolume {
		t.Fatalf("nats-server %s: JetStream %v, store %q; want JetStream stored on a volume", strings.Join(c.Args, " "), opts.JetStream, opts.StoreDir)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.HTTPHost, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT
	opts.NoSigs, opts.NoLog = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	serves := map[int32]string{int32(clientPort): u.Host}
	if monitorPort > 0 {
		serves[int32(monitorPort)] = s.MonitorAddr().String()
	}
	r.natsURL = s.ClientURL()
	nc, err := nats.Connect(r.natsURL, nats.Name("rehearsal-reader"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if r.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	r.services = map[string]string{}
	r.serveSelected(sts, c, serves)
	t.Logf("nats-server %s (JetStream, store %s) serves the StatefulSet %s", strings.Join(c.Args, " "), opts.StoreDir, sts.Name)
}

// serveSelected maps every Service port of the namespace whose Service
// selects the StatefulSet's pods to the address serving its target port.
func (r *rehearsal) serveSelected(sts *appsv1.StatefulSet, c corev1.Container, serves map[int32]string) {
	t := r.t
	svcs, err := r.cs.CoreV1().Services(r.id).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podLabels := labels.Set(sts.Spec.Template.Labels)
	for _, svc := range svcs.Items {
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			port := int32(containerPort(t, c, sp.TargetPort))
			target, ok := serves[port]
			if !ok {
				t.Fatalf("Service %s port %s leads to container port %d of %s, which the rehearsal's nats-server does not serve", svc.Name, sp.Name, port, sts.Name)
			}
			r.services[net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(sp.Port)))] = target
		}
	}
}

// newKubelet prepares what every pod gets: the image, the apiserver behind
// the kubernetes Service, and the namespace's Services by their cluster
// DNS names.
func (r *rehearsal) newKubelet(imageDir string, cfg *v1.ConfigFile) *kubelet {
	t := r.t
	t.Helper()
	api, err := r.cs.CoreV1().Services(metav1.NamespaceDefault).Get(r.ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubernetes Service, which pods reach the apiserver through: %v", err)
	}
	apiURL, err := url.Parse(r.env.APIServerURL())
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{t: t, ctx: r.ctx, cs: r.cs, dir: t.TempDir(), image: imageDir, cfg: cfg, apiIP: api.Spec.ClusterIP, apiPort: api.Spec.Ports[0].Port, caPEM: readAll(t, r.env.CAFile()), services: r.services}
	k.services[net.JoinHostPort(k.apiIP, strconv.Itoa(int(k.apiPort)))] = apiURL.Host
	var hosts strings.Builder
	fmt.Fprintf(&hosts, "%s\tkubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local\n", k.apiIP)
	svcs, err := r.cs.CoreV1().Services(r.id).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range svcs.Items {
		if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
			n := svc.Name + "." + r.id
			fmt.Fprintf(&hosts, "%s\t%s %s %s.svc %s.svc.cluster.local\n", ip, svc.Name, n, n, n)
		}
	}
	k.hosts = hosts.String()
	return k
}

// startPod starts a replica of d, named as the ReplicaSet controller
// names pods.
func (r *rehearsal) startPod(d *appsv1.Deployment) *rehearsalPod {
	t := r.t
	t.Helper()
	name := fmt.Sprintf("%s-%s-%s", d.Name, utilrand.String(10), utilrand.String(5))
	spec, probes := r.kubelet.pod(d, name)
	p, err := startPod(filepath.Join(r.kubelet.dir, name), r.tools, spec)
	if err != nil {
		t.Fatal(err)
	}
	rp := &rehearsalPod{pod: p, probes: probes}
	t.Cleanup(func() {
		if !p.exited() {
			p.kill()
		}
		if t.Failed() {
			t.Logf("==== pod %s (exit %v):\n%s", name, p.state, p.output())
		}
	})
	if err := p.waitExec(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range spec.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if rp.cfg, err = config.Load(r.ctx, envconfig.MapLookuper(env)); err != nil {
		t.Fatalf("pod %s: the bridge's settings do not load: %v", name, err)
	}
	t.Logf("pod %s (IP %s) started: %s as %d:%d, groups %v", name, spec.ip, strings.Join(spec.entrypoint, " "), spec.uid, spec.gid, spec.groups)
	return rp
}

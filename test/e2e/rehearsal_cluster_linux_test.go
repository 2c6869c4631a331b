package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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
	"github.com/kubebridge/kubebridge/internal/natsconf"
)

// startNATS creates the NATS Secrets as the README says
// (hack/nats-secrets.sh, hack/nats-certs.sh), and serves the NATS servers
// of the overlay's StatefulSet in this process: as many as its replicas,
// each with the nats.conf of its ConfigMap parsed by nats-server with the
// container's environment (its pod name, the Secrets' passwords) and the
// files of the Secrets it mounts (its certificates), clustered over their
// routes with mutual TLS. The overlay's Services that select them lead to
// them: each Service port's target port, by name, is a container port,
// served by the servers' client or monitoring listener, one server per
// connection.
func (r *rehearsal) startNATS() {
	t := r.t
	t.Helper()
	r.createNATSSecrets()
	sts, err := r.cs.AppsV1().StatefulSets(r.id).Get(r.ctx, "nats", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the overlay's NATS StatefulSet: %v", err)
	}
	cms, err := r.cs.CoreV1().ConfigMaps(r.id).List(r.ctx, metav1.ListOptions{})
	must(t, err)
	configMaps := map[string]map[string]string{}
	for _, cm := range cms.Items {
		configMaps[cm.Name] = cm.Data
	}
	secretList, err := r.cs.CoreV1().Secrets(r.id).List(r.ctx, metav1.ListOptions{})
	must(t, err)
	secrets := map[string]map[string]string{}
	for _, s := range secretList.Items {
		secrets[s.Name] = map[string]string{}
		for k, v := range s.Data {
			secrets[s.Name][k] = string(v)
		}
	}
	certs := natsconf.WriteCerts(t, secrets)
	var opts []*server.Options
	for i := range int(*sts.Spec.Replicas) {
		opts = append(opts, natsServerOptions(t, sts, configMaps, i, secrets, certs))
	}
	c := sts.Spec.Template.Spec.Containers[0]
	clientPort, monitorPort := int32(opts[0].Port), int32(opts[0].HTTPPort)
	servers := startNATSServers(t, sts, opts)
	var clients, monitors []string
	for _, s := range servers {
		clients = append(clients, clientHost(t, s))
		monitors = append(monitors, s.MonitorAddr().String())
	}
	serves := map[int32]func() string{clientPort: roundRobin(clients), monitorPort: roundRobin(monitors)}
	r.services = map[string]func() string{}
	r.serveSelected(sts, c, serves)

	// The rehearsal reads the stream as a reader, over TLS with the
	// readers' certificate.
	var urls []string
	for _, addr := range clients {
		urls = append(urls, "tls://"+addr)
	}
	r.natsURL = strings.Join(urls, ",")
	reader := secrets["kubebridge-nats-reader"]
	nc, err := nats.Connect(r.natsURL, append(readerTLS(certs), nats.Name("rehearsal-reader"), nats.UserInfo(reader["user"], reader["password"]))...)
	if err != nil {
		t.Fatalf("connect as the reader: %v", err)
	}
	t.Cleanup(nc.Close)
	if r.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nats-servers (nats-server --config of ConfigMap, JetStream, cluster %s, TLS) serve the StatefulSet %s", len(servers), opts[0].Cluster.Name, sts.Name)
}

// createNATSSecrets runs hack/nats-secrets.sh and hack/nats-certs.sh, as
// the README tells users to, against the test apiserver.
func (r *rehearsal) createNATSSecrets() {
	t := r.t
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("hack/nats-secrets.sh needs kubectl: %v", err)
	}
	for _, script := range []string{"nats-secrets.sh", "nats-certs.sh"} {
		cmd := exec.CommandContext(r.ctx, filepath.Join(deployModuleRoot(t), "hack", script), r.id)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+r.env.KubeconfigPath(), "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/%s %s: %v\n%s", script, r.id, err, out)
		}
	}
}

// roundRobin returns the addresses in turn.
func roundRobin(addrs []string) func() string {
	var next atomic.Int64
	return func() string { return addrs[int(next.Add(1)-1)%len(addrs)] }
}

// serveSelected maps every Service port of the namespace whose Service
// selects the StatefulSet's pods to the address serving its target port.
func (r *rehearsal) serveSelected(sts *appsv1.StatefulSet, c corev1.Container, serves map[int32]func() string) {
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
	k.services[net.JoinHostPort(k.apiIP, strconv.Itoa(int(k.apiPort)))] = func() string { return apiURL.Host }
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
	name := fmt.Sprintf("%s-%s-%s", d.Name, utilrand.String(10), utilrand.String(5))
	return r.startPodOf(d.Namespace, &d.Spec.Template.Spec, name)
}

// startPodOf starts a pod of the template tmpl in namespace ns, named
// name (a StatefulSet's pods are named by their ordinals).
func (r *rehearsal) startPodOf(ns string, tmpl *corev1.PodSpec, name string) *rehearsalPod {
	t := r.t
	t.Helper()
	spec, probes := r.kubelet.pod(ns, tmpl, name)
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
	// The settings, loaded from the pod's environment with each file it
	// names on a mount of the pod (the configuration file, the TLS files)
	// where that mount's files are on this machine: Load reads them all.
	env := map[string]string{}
	for _, kv := range spec.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
		for _, m := range spec.mounts {
			if rel, ok := strings.CutPrefix(v, strings.TrimSuffix(m.target, "/")+"/"); ok {
				env[k] = filepath.Join(m.source, rel)
			}
		}
	}
	if rp.cfg, err = config.Load(r.ctx, envconfig.MapLookuper(env)); err != nil {
		t.Fatalf("pod %s: the bridge's settings do not load: %v", name, err)
	}
	t.Logf("pod %s (IP %s) started: %s as %d:%d, groups %v", name, spec.ip, strings.Join(spec.entrypoint, " "), spec.uid, spec.gid, spec.groups)
	return rp
}

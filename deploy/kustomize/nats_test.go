package kustomize_test

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebridge/kubebridge/internal/natsconf"
)

// natsVolume is the size of each NATS server's volume, and the most
// JetStream may use of it.
const (
	natsVolume    = "1Gi"
	natsStoreLeft = 0.75
)

// TestNATSCluster: a kustomization that brings NATS runs the nats-server
// of go.mod as a 3-node cluster: a StatefulSet of 3 with JetStream on a
// volume each, routes to every server through the headless Service (its
// configuration parsed by nats-server's own parser), a budget of one
// server down at a time, preferred anti-affinity, accounts with no
// anonymous access, and the bridge's stream replicated 3 times.
func TestNATSCluster(t *testing.T) {
	for _, b := range okBuilds(t) {
		exp, known := want[b.name]
		// A sharded bridge is a StatefulSet too (components/shards).
		var sets []*appsv1.StatefulSet
		for _, ss := range ofType[*appsv1.StatefulSet](b) {
			if !runsBridge(&ss.Spec.Template) {
				sets = append(sets, ss)
			}
		}
		if known && !exp.nats {
			if len(sets) > 0 {
				t.Errorf("%s: has StatefulSets, but brings no NATS server", b.name)
			}
			continue
		}
		if !known {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			if len(sets) != 1 {
				t.Fatalf("%d StatefulSets, want the NATS servers", len(sets))
			}
			checkNATSStatefulSet(t, b, sets[0])
		})
	}
}

func checkNATSStatefulSet(t *testing.T, b *build, ss *appsv1.StatefulSet) {
	const replicas = 3
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != replicas {
		t.Errorf("StatefulSet %s: %v replicas, want %d", ss.Name, ss.Spec.Replicas, replicas)
	}
	if ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet %s: podManagementPolicy %q, want Parallel: a JetStream cluster waits for its peers", ss.Name, ss.Spec.PodManagementPolicy)
	}
	headless := findService(b, ss.Namespace, ss.Spec.ServiceName)
	if headless == nil {
		t.Fatalf("StatefulSet %s: governing Service %s is not in the output", ss.Name, ss.Spec.ServiceName)
	}
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: want headless and publishing not-ready addresses, so starting servers find each other", headless.Name)
	}
	c := &ss.Spec.Template.Spec.Containers[0]
	if want := "nats:" + server.VERSION; c.Image != want && !strings.HasPrefix(c.Image, want+"-") {
		t.Errorf("NATS image %s, want %s (the nats-server of go.mod, which the suite runs)", c.Image, want)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/data" && !m.ReadOnly }) {
		t.Errorf("NATS has no writable volume at /data")
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("NATS: want one volumeClaimTemplate")
	} else if size := ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; size.String() != natsVolume {
		t.Errorf("NATS volume %s, want %s", size.String(), natsVolume)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil || !strings.HasPrefix(p.HTTPGet.Path, "/healthz") || p.HTTPGet.Port != intstr.FromString("monitor") {
			t.Errorf("NATS probes must GET /healthz on the monitor port")
			break
		}
	}
	svc := findService(b, ss.Namespace, "nats")
	if svc == nil {
		t.Fatal("no Service nats")
	}
	for name, port := range map[string]int32{"client": 4222, "monitor": 8222} {
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == name && p.Port == port }) {
			t.Errorf("Service nats has no port %s %d", name, port)
		}
	}
	checkNATSSpreading(t, b, ss, replicas)
	certs := natsCerts(t)
	opts := natsConfig(t, b, ss, c, 0, certs)
	checkNATSOptions(t, b, ss, c, opts, replicas)
	checkNATSTLS(t, b, ss, opts, certs)
}

// checkNATSSpreading: one server down at a time, and a node going away
// takes one server where there are several nodes.
func checkNATSSpreading(t *testing.T, b *build, ss *appsv1.StatefulSet, replicas int) {
	var budgets []*policyv1.PodDisruptionBudget
	for _, p := range ofType[*policyv1.PodDisruptionBudget](b) {
		if selects(p.Spec.Selector, ss.Spec.Template.Labels) {
			budgets = append(budgets, p)
		}
	}
	if len(budgets) != 1 {
		t.Errorf("%d PodDisruptionBudgets select the NATS servers, want 1", len(budgets))
	} else if mu := budgets[0].Spec.MaxUnavailable; mu == nil || budgets[0].Spec.MinAvailable != nil || mu.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %s: want maxUnavailable 1: two of %d keep the stream's quorum", budgets[0].Name, replicas)
	}
	aff := ss.Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		!slices.ContainsFunc(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, func(w corev1.WeightedPodAffinityTerm) bool {
			return w.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && selects(w.PodAffinityTerm.LabelSelector, ss.Spec.Template.Labels)
		}) {
		t.Errorf("NATS: want a preferred (never required) anti-affinity on kubernetes.io/hostname between the servers")
	}
	var policies []*networkingv1.NetworkPolicy
	for _, p := range ofType[*networkingv1.NetworkPolicy](b) {
		if selects(&p.Spec.PodSelector, ss.Spec.Template.Labels) {
			policies = append(policies, p)
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%d NetworkPolicies select the NATS servers, want 1", len(policies))
	}
	bc := bridgeOf(t, b)
	admits := func(port string, labels map[string]string) bool {
		for _, rule := range policies[0].Spec.Ingress {
			if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.StrVal == port }) {
				continue
			}
			for _, from := range rule.From {
				if from.PodSelector != nil && from.NamespaceSelector == nil && selects(from.PodSelector, labels) {
					return true
				}
			}
		}
		return false
	}
	if !admits("client", bc.pod.Labels) {
		t.Errorf("NetworkPolicy %s: the bridge's pods may not reach the client port", policies[0].Name)
	}
	if !admits("cluster", ss.Spec.Template.Labels) {
		t.Errorf("NetworkPolicy %s: the NATS servers may not reach each other's cluster port", policies[0].Name)
	}
	if admits("client", map[string]string{"app": "anything"}) || admits("cluster", bc.pod.Labels) {
		t.Errorf("NetworkPolicy %s: admits other pods of the namespace", policies[0].Name)
	}
}

// natsConfig parses the configuration the StatefulSet's server i runs,
// with the ConfigMaps of the output, placeholders for Secret values, and
// for files on mounted Secrets those hack/nats-certs.sh wrote into certs.
func natsConfig(t *testing.T, b *build, ss *appsv1.StatefulSet, c *corev1.Container, i int, certs natsconf.Certs) *server.Options {
	t.Helper()
	configMaps := map[string]map[string]string{}
	for _, cm := range ofType[*corev1.ConfigMap](b) {
		configMaps[cm.Name] = cm.Data
	}
	return natsconf.Options(t, ss, c, i, configMaps, func(ref *corev1.SecretKeySelector) string {
		return "secret-" + ref.Name + "-" + ref.Key
	}, certs)
}

// checkNATSOptions checks a parsed server configuration against the
// StatefulSet and the bridge.
func checkNATSOptions(t *testing.T, b *build, ss *appsv1.StatefulSet, c *corev1.Container, opts *server.Options, replicas int) {
	port := func(name string) int {
		p := containerPort(c, name)
		if p == nil {
			t.Fatalf("NATS has no container port %s", name)
		}
		return int(p.ContainerPort)
	}
	if opts.ServerName != ss.Name+"-0" {
		t.Errorf("server_name %q, want the pod's name (%s-0)", opts.ServerName, ss.Name)
	}
	if opts.Port != port("client") || opts.HTTPPort != port("monitor") || opts.Cluster.Port != port("cluster") {
		t.Errorf("the server listens on %d (clients), %d (monitoring), %d (routes); the container ports are %d, %d, %d",
			opts.Port, opts.HTTPPort, opts.Cluster.Port, port("client"), port("monitor"), port("cluster"))
	}
	if !opts.JetStream || !strings.HasPrefix(opts.StoreDir, "/data/") {
		t.Errorf("JetStream %v, store %q: want JetStream on the /data volume", opts.JetStream, opts.StoreDir)
	}
	volume := resource.MustParse(natsVolume)
	if opts.JetStreamMaxStore <= 0 || float64(opts.JetStreamMaxStore) > natsStoreLeft*float64(volume.Value()) {
		t.Errorf("max_file_store %d: want at most %.0f%% of the %s volume", opts.JetStreamMaxStore, 100*natsStoreLeft, natsVolume)
	}
	var routes []string
	for _, r := range opts.Routes {
		routes = append(routes, r.Host)
	}
	var want []string
	for i := range replicas {
		want = append(want, fmt.Sprintf("%s-%d.%s:%d", ss.Name, i, ss.Spec.ServiceName, port("cluster")))
	}
	if !slices.Equal(routes, want) {
		t.Errorf("routes %q, want every server through the headless Service: %q", routes, want)
	}
	if opts.Cluster.Name == "" {
		t.Errorf("the cluster has no name")
	}

	// Accounts: no anonymous access, the bridge's user in a JetStream
	// account, the reader unable to write.
	if opts.NoAuthUser != "" {
		t.Errorf("no_auth_user %q: anonymous clients are let in", opts.NoAuthUser)
	}
	bc := bridgeOf(t, b)
	env, _ := environment(t, b, bc)
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	bridgeUser := users["kubebridge"]
	if bridgeUser == nil || bridgeUser.Account == nil || bridgeUser.Permissions == nil || bridgeUser.Permissions.Publish == nil {
		t.Fatalf("nats.conf has no user kubebridge with permissions in an account")
	}
	if !slices.Contains(bridgeUser.Permissions.Publish.Allow, "kubebridge.>") {
		t.Errorf("user kubebridge may not publish on kubebridge.>")
	}
	reader := users["reader"]
	if reader == nil || reader.Account != bridgeUser.Account || reader.Permissions == nil || reader.Permissions.Publish == nil ||
		!slices.Contains(reader.Permissions.Publish.Deny, "kubebridge.>") || slices.Contains(reader.Permissions.Publish.Allow, "kubebridge.>") {
		t.Errorf("user reader: want the bridge's account, and publishing on kubebridge.> denied")
	}
	for _, p := range append(slices.Clone(bridgeUser.Permissions.Publish.Allow), reader.Permissions.Publish.Allow...) {
		if strings.Contains(p, "PURGE") || strings.Contains(p, "STREAM.DELETE") || strings.Contains(p, "MSG.DELETE") || p == ">" || p == "$JS.API.>" {
			t.Errorf("a user may publish on %s: nobody may purge or delete the stream or its messages", p)
		}
	}
	// The passwords the server checks are the Secrets' the bridge reads.
	if got, want := bridgeUser.Password, "secret-kubebridge-nats-password"; got != want {
		t.Errorf("user kubebridge's password is %q, want the Secret kubebridge-nats's key password", got)
	}
	for _, e := range bc.container.Env {
		if e.Name != "NATS_PASSWORD" {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref == nil || "secret-"+ref.Name+"-"+ref.Key != bridgeUser.Password {
			t.Errorf("the bridge's NATS_PASSWORD comes from %v, the server's password for kubebridge from %q", e.ValueFrom, bridgeUser.Password)
		}
	}
	if u, err := url.Parse(env["NATS_URL"]); err != nil || u.Hostname() != "nats" {
		t.Errorf("the bridge's NATS_URL %q is not the Service nats", env["NATS_URL"])
	}
	if r, _ := strconv.Atoi(env["BRIDGE_STREAM_REPLICAS"]); r != replicas {
		t.Errorf("BRIDGE_STREAM_REPLICAS=%q, want %d: one copy of the stream on each server", env["BRIDGE_STREAM_REPLICAS"], replicas)
	}
	if max, _ := strconv.ParseInt(env["BRIDGE_STREAM_MAX_BYTES"], 10, 64); max <= 0 || max > opts.JetStreamMaxStore {
		t.Errorf("BRIDGE_STREAM_MAX_BYTES=%q: want a cap below max_file_store (%d), or the stream fills the volume", env["BRIDGE_STREAM_MAX_BYTES"], opts.JetStreamMaxStore)
	}
}

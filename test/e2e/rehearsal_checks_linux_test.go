package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// probeOf returns the pod's probe of kind.
func (p *rehearsalPod) probeOf(kind string) probe {
	i := slices.IndexFunc(p.probes, func(pr probe) bool { return pr.kind == kind })
	if i < 0 {
		panic("the container has no " + kind + " probe")
	}
	return p.probes[i]
}

// check runs one probe once, as the kubelet does: 200-399 succeeds.
func (p *rehearsalPod) check(kind string) (bool, int, string) {
	pr := p.probeOf(kind)
	code, body, err := p.probe(pr.path, pr.port)
	if err != nil {
		return false, 0, err.Error()
	}
	return code >= 200 && code < 400, code, strings.TrimSpace(body)
}

// scrape reads /metrics on the port of the probes (one listener serves
// /healthz, /readyz and /metrics; the metrics Service targets it too).
func (r *rehearsal) scrape(p *rehearsalPod) metrics {
	r.t.Helper()
	pr := p.probeOf("readiness")
	code, body, err := p.probe("/metrics", pr.port)
	if err != nil || code != http.StatusOK {
		r.t.Fatalf("%s: /metrics: HTTP %d, %v", p.spec.name, code, err)
	}
	m, err := parseMetrics(body)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// waitReady waits until the startup probe and then the readiness probe
// succeed, and checks the liveness probe.
func (r *rehearsal) waitReady(p *rehearsalPod, timeout time.Duration) {
	t := r.t
	t.Helper()
	// The probes in the kubelet's order: each is polled until it
	// passes, then the next.
	kinds := []string{"startup", "readiness", "liveness"}
	var code int
	var body string
	err := wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for ; len(kinds) > 0; kinds = kinds[1:] {
			var ok bool
			if ok, code, body = p.check(kinds[0]); !ok && p.exited() {
				return false, errors.New("the pod exited")
			} else if !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		kind := kinds[0]
		t.Fatalf("%s: %s probe %s:%d%s: HTTP %d %q (exited: %v)", p.spec.name, kind, p.spec.ip, p.probeOf(kind).port, p.probeOf(kind).path, code, body, p.exited())
	}
}

// checkSandbox checks the running container from outside, in /proc: the
// user, groups, no_new_privs and capabilities, the environment, and that
// nothing it sees is writable but /proc.
func (r *rehearsal) checkSandbox(p *rehearsalPod) {
	t := r.t
	t.Helper()
	st, err := p.procStatus()
	if err != nil {
		t.Fatal(err)
	}
	uid, gid := r.kubelet.imageUser()
	if p.spec.uid != uid || p.spec.gid != gid {
		t.Errorf("%s: the pod runs as %d:%d, the image declares %s", p.spec.name, p.spec.uid, p.spec.gid, r.kubelet.cfg.Config.User)
	}
	want := map[string]string{
		"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532", "Groups": "65532",
		"NoNewPrivs": "1", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("%s: /proc status %s: %q, want %q", p.spec.name, k, st[k], v)
		}
	}
	environ, err := p.environ()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(environ)
	if !slices.Equal(environ, p.spec.env) {
		t.Errorf("%s: the process's environment\n%q\nis not the pod's\n%q", p.spec.name, environ, p.spec.env)
	}
	rw, err := p.writableMounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rw, []string{"/proc"}) {
		t.Errorf("%s: writable mounts %q, want only /proc (readOnlyRootFilesystem, Secrets read-only)", p.spec.name, rw)
	}
}

// leader waits until the Lease names one pod, and checks that exactly that
// one reports kubebridge_leader 1.
func (r *rehearsal) leader() (leader, standby *rehearsalPod) {
	t := r.t
	t.Helper()
	cfg := r.pods[0].cfg
	var holder string
	var leading []*rehearsalPod
	err := wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lease, err := r.cs.CoordinationV1().Leases(cfg.LeaseNamespace).Get(ctx, cfg.LeaseName, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			holder = *lease.Spec.HolderIdentity
		}
		leading = leading[:0]
		for _, p := range r.pods {
			if !p.exited() && strings.HasPrefix(holder, p.spec.name+"_") && r.scrape(p).sum("kubebridge_leader") == 1 {
				leading = append(leading, p)
			}
		}
		return len(leading) == 1, nil
	})
	if err != nil {
		t.Fatalf("Lease %s/%s holder %q; %d pods lead", cfg.LeaseNamespace, cfg.LeaseName, holder, len(leading))
	}
	leader = leading[0]
	for _, p := range r.pods {
		if p == leader || p.exited() {
			continue
		}
		if got := r.scrape(p).sum("kubebridge_leader"); got != 0 {
			t.Errorf("%s: kubebridge_leader %v beside the leader %s", p.spec.name, got, leader.spec.name)
		}
		standby = p
	}
	return leader, standby
}

// checkStream: the bridge made its stream with BRIDGE_STREAM_REPLICAS
// copies, one on each NATS server, and every copy catches up. A follower
// may trail the leader for a moment right after the start-up snapshot's
// thousands of messages, so currency is waited for, within a minute.
func (r *rehearsal) checkStream(leader *rehearsalPod) {
	t := r.t
	t.Helper()
	cfg := leader.cfg
	s, err := r.js.Stream(r.ctx, cfg.StreamName)
	must(t, err)
	var behind []string
	err = wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		info, err := s.Info(r.ctx)
		must(t, err)
		if info.Config.Replicas != cfg.StreamReplicas || info.Cluster == nil || len(info.Cluster.Replicas)+1 != cfg.StreamReplicas {
			t.Fatalf("stream %s: %d replicas configured, cluster %+v; want %d (BRIDGE_STREAM_REPLICAS)", cfg.StreamName, info.Config.Replicas, info.Cluster, cfg.StreamReplicas)
		}
		behind = behind[:0]
		for _, p := range info.Cluster.Replicas {
			if !p.Current {
				behind = append(behind, p.Name)
			}
		}
		if len(behind) == 0 {
			t.Logf("stream %s: %d replicas, leader %s, %d messages", cfg.StreamName, info.Config.Replicas, info.Cluster.Leader, info.State.Msgs)
		}
		return len(behind) == 0, nil
	})
	if err != nil {
		t.Fatalf("stream %s: replicas on %v not current after a minute", cfg.StreamName, behind)
	}
}

// expectedEvent is an event a change the rehearsal makes must cause.
type expectedEvent struct {
	subject, ceType, rv, kind, name string
}

// checkChanges creates, updates and deletes one object of each default
// type in a namespace of its own and waits for the events, decoded with
// sdk-go, each carrying its object (and the old one on updates).
func (r *rehearsal) checkChanges(leader *rehearsalPod) string {
	t := r.t
	t.Helper()
	ns := r.appNamespace()
	cfg := leader.cfg
	prefix := cfg.SubjectPrefix + "." + cfg.ClusterName
	subj := func(group, version, resource, name string) string {
		return strings.Join([]string{prefix, group, version, resource, ns, name}, ".")
	}
	cmSubj, svcSubj, depSubj := subj("core", "v1", "configmaps", "settings"), subj("core", "v1", "services", "web"), subj("apps", "v1", "deployments", "web")
	cms, svcs, deps := r.cs.CoreV1().ConfigMaps(ns), r.cs.CoreV1().Services(ns), r.cs.AppsV1().Deployments(ns)

	cm, err := cms.Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "a"}}, metav1.CreateOptions{})
	must(t, err)
	svc, err := svcs.Create(r.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)
	dep, err := deps.Create(r.ctx, webDeployment(), metav1.CreateOptions{})
	must(t, err)
	r.waitChanges(ns, prefix, []expectedEvent{
		{cmSubj, contract.TypeAdded, cm.ResourceVersion, "ConfigMap", "settings"},
		{svcSubj, contract.TypeAdded, svc.ResourceVersion, "Service", "web"},
		{depSubj, contract.TypeAdded, dep.ResourceVersion, "Deployment", "web"},
	})

	cm.Data["mode"] = "b"
	cm2, err := cms.Update(r.ctx, cm, metav1.UpdateOptions{})
	must(t, err)
	svc.Labels = map[string]string{"tier": "front"}
	svc2, err := svcs.Update(r.ctx, svc, metav1.UpdateOptions{})
	must(t, err)
	dep.Spec.Replicas = ptr.To[int32](3)
	dep2, err := deps.Update(r.ctx, dep, metav1.UpdateOptions{})
	must(t, err)
	r.waitChanges(ns, prefix, []expectedEvent{
		{cmSubj, contract.TypeUpdated, cm2.ResourceVersion, "ConfigMap", "settings"},
		{svcSubj, contract.TypeUpdated, svc2.ResourceVersion, "Service", "web"},
		{depSubj, contract.TypeUpdated, dep2.ResourceVersion, "Deployment", "web"},
	})

	must(t, cms.Delete(r.ctx, "settings", metav1.DeleteOptions{}))
	must(t, svcs.Delete(r.ctx, "web", metav1.DeleteOptions{}))
	must(t, deps.Delete(r.ctx, "web", metav1.DeleteOptions{}))
	r.waitChanges(ns, prefix, []expectedEvent{
		{cmSubj, contract.TypeDeleted, "", "ConfigMap", "settings"},
		{svcSubj, contract.TypeDeleted, "", "Service", "web"},
		{depSubj, contract.TypeDeleted, "", "Deployment", "web"},
	})
	t.Logf("created, updated and deleted a ConfigMap, a Service and a Deployment: each change's event is on %s.*.*.*.%s.*", prefix, ns)
	return ns
}

// waitChanges waits until the stream holds an event for every change,
// and checks each one's data as a consumer decodes it with sdk-go.
func (r *rehearsal) waitChanges(ns, prefix string, want []expectedEvent) []replay.Message {
	t := r.t
	t.Helper()
	cfg := r.pods[0].cfg
	filter := prefix + ".*.*.*." + ns + ".*"
	var msgs []replay.Message
	var missing []string
	err := wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		msgs, err = replay.ReadAll(ctx, r.js, cfg.StreamName, filter)
		missing = nil
		for _, c := range want {
			if err != nil || !slices.ContainsFunc(msgs, func(m replay.Message) bool { return c.matches(m) }) {
				missing = append(missing, fmt.Sprintf("%s %s (rv %q)", c.ceType, c.subject, c.rv))
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("the stream %s has no %s:\n%s", cfg.StreamName, strings.Join(missing, ", "), describe(msgs))
	}
	for _, c := range want {
		m := msgs[slices.IndexFunc(msgs, func(m replay.Message) bool { return c.matches(m) })]
		var data struct {
			Object    map[string]any `json:"object"`
			OldObject map[string]any `json:"oldObject"`
		}
		if err := m.Event.DataAs(&data); err != nil {
			t.Errorf("%s on %s: data: %v", c.ceType, c.subject, err)
			continue
		}
		meta, _ := data.Object["metadata"].(map[string]any)
		if data.Object["kind"] != c.kind || meta["name"] != c.name || meta["namespace"] != ns {
			t.Errorf("%s on %s: object kind %v, name %v/%v; want %s %s/%s", c.ceType, c.subject, data.Object["kind"], meta["namespace"], meta["name"], c.kind, ns, c.name)
		}
		if (c.ceType == contract.TypeUpdated) != (data.OldObject != nil) {
			t.Errorf("%s on %s: oldObject %v", c.ceType, c.subject, data.OldObject != nil)
		}
	}
	return msgs
}

func (c expectedEvent) matches(m replay.Message) bool {
	return m.Subject == c.subject && m.Event.Type() == c.ceType && (c.rv == "" || m.Ext(contract.ExtResourceVersion) == c.rv)
}

// checkTakeover SIGKILLs the leader: the standby takes the Lease when it
// expires, becomes ready again once its start-up snapshots are stored, and
// publishes a new change in a newer term.
func (r *rehearsal) checkTakeover(leader, standby *rehearsalPod, ns string) {
	t := r.t
	t.Helper()
	cfg := leader.cfg
	oldTerm := r.scrape(leader).sum("kubebridge_term")
	killed := time.Now()
	leader.kill()
	newLeader, _ := r.leaderWithin(cfg.LeaseDuration + time.Minute)
	if newLeader != standby {
		t.Fatalf("after the SIGKILL of %s, %s leads; want the standby %s", leader.spec.name, newLeader.spec.name, standby.spec.name)
	}
	took := time.Since(killed)
	r.waitReady(standby, time.Minute)
	newTerm := r.scrape(standby).sum("kubebridge_term")
	if newTerm <= oldTerm {
		t.Errorf("term %v after the takeover, %v before", newTerm, oldTerm)
	}
	cm, err := r.cs.CoreV1().ConfigMaps(ns).Create(r.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-takeover"}}, metav1.CreateOptions{})
	must(t, err)
	prefix := cfg.SubjectPrefix + "." + cfg.ClusterName
	msgs := r.waitChanges(ns, prefix, []expectedEvent{{prefix + ".core.v1.configmaps." + ns + ".after-takeover", contract.TypeAdded, cm.ResourceVersion, "ConfigMap", "after-takeover"}})
	if term := msgs[len(msgs)-1].Ext(contract.ExtTerm); term != strconv.FormatFloat(newTerm, 'f', -1, 64) {
		t.Errorf("the change after the takeover is in term %s, want %v", term, newTerm)
	}
	t.Logf("SIGKILL of %s: %s led %v later (BRIDGE_LEASE_DURATION %v), term %v -> %v", leader.spec.name, standby.spec.name, took.Round(time.Millisecond), cfg.LeaseDuration, oldTerm, newTerm)
}

// leaderWithin is leader with a longer wait.
func (r *rehearsal) leaderWithin(timeout time.Duration) (*rehearsalPod, *rehearsalPod) {
	var holder string
	var last error
	err := wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		holder, last = r.leaseHolder()
		return slices.ContainsFunc(r.pods, func(p *rehearsalPod) bool {
			return !p.exited() && strings.HasPrefix(holder, p.spec.name+"_")
		}), nil
	})
	switch {
	case r.ctx.Err() != nil:
		// Every read fails from now on: say so, not "no holder".
		r.t.Fatalf("the rehearsal's context ended while waiting for a running pod to hold the Lease: %v (last read error %v)", err, last)
	case err != nil:
		r.t.Fatalf("no running pod holds the Lease after %v (holder %q, last read error %v)", timeout, holder, last)
	}
	return r.leader()
}

// leaseHolder is the Lease's holder identity: "" when it has none, or
// when it could not be read (err says why).
func (r *rehearsal) leaseHolder() (string, error) {
	cfg := r.pods[0].cfg
	lease, err := r.cs.CoordinationV1().Leases(cfg.LeaseNamespace).Get(r.ctx, cfg.LeaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// checkMissingPermission rolls out what a user who adds a type to
// BRIDGE_RESOURCES without its ClusterRole rule would: an overlay on top
// of the rehearsed one that adds secrets. The new pod starts, stays alive
// (liveness holds: no crash loop) and unready, /readyz naming secrets, and
// its log says why.
func (r *rehearsal) checkMissingPermission(leader *rehearsalPod) {
	t := r.t
	t.Helper()
	resources := ""
	for _, kv := range leader.spec.env {
		if v, ok := strings.CutPrefix(kv, "BRIDGE_RESOURCES="); ok {
			resources = v
		}
	}
	overlay := t.TempDir()
	// kustomize takes a base by a relative path only.
	base, err := filepath.Rel(overlay, filepath.Join(deployModuleRoot(t), "deploy", "kustomize", filepath.FromSlash(rehearsalOverlay)))
	must(t, err)
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
configMapGenerator:
  - name: kubebridge-config
    behavior: merge
    literals:
      - BRIDGE_RESOURCES=%s; secrets
`, base, resources)
	must(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644))
	r.apply(overlay)
	d := r.deployment()
	p := r.startPod(d)
	r.pods = append(r.pods, p)

	var body string
	var code int
	err = wait.PollUntilContextTimeout(r.ctx, 500*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		var ok bool
		ok, code, body = p.check("readiness")
		if !ok && code == http.StatusServiceUnavailable && strings.Contains(body, "secrets") {
			return true, nil
		}
		if p.exited() {
			return false, errors.New("the pod exited")
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: /readyz HTTP %d %q; want 503 naming secrets (%v)", p.spec.name, code, body, err)
	}
	// The kubelet would restart it only on failing liveness probes: they
	// must hold for 10s, however often the informer retries meanwhile.
	err = throughout(10*time.Second, time.Second, func() error {
		if ok, code, b := p.check("liveness"); !ok || p.exited() {
			return fmt.Errorf("%s: liveness HTTP %d %q (exited %v): the pod would be restarted", p.spec.name, code, b, p.exited())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// One line, however often the informer retried meanwhile.
	var why []string
	for _, l := range lines(p.output()) {
		if strings.Contains(l, "secrets") && strings.Contains(l, "forbidden") {
			why = append(why, l)
		}
	}
	if len(why) != 1 || !strings.Contains(why[0], `resource="secrets.v1"`) || !strings.Contains(why[0], "permission denied") {
		t.Errorf("%s: %d log lines about listing secrets being forbidden, want one naming secrets.v1 and saying permission denied:\n%s", p.spec.name, len(why), strings.Join(why, "\n"))
	} else {
		t.Logf("%s: the log says why, once: %s", p.spec.name, why[0])
	}
	if n := r.scrape(p).sum("kubebridge_watch_errors_total", "resource", "secrets.v1"); n == 0 {
		t.Errorf("%s: kubebridge_watch_errors_total{resource=secrets.v1} is 0", p.spec.name)
	}
	t.Logf("%s: /readyz 503 %q; liveness held for 10s", p.spec.name, body)
}

// appNamespace creates a namespace for the rehearsal's own objects.
func (r *rehearsal) appNamespace() string {
	ns, err := r.cs.CoreV1().Namespaces().Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.id + "-apps-" + utilrand.String(4)}}, metav1.CreateOptions{})
	must(r.t, err)
	return ns.Name
}

func webDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

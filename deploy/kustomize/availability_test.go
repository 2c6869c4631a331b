package kustomize_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebridge/kubebridge/internal/config"
)

// natsDrainTimeout is how long the bridge waits for its NATS connection
// to drain once it has stopped publishing (drainConn in
// internal/bridge/bridge.go).
const natsDrainTimeout = 5 * time.Second

// hostnameKey is the node label that tells nodes apart.
const hostnameKey = "kubernetes.io/hostname"

// checkGracePeriod: the kubelet kills the container terminationGracePeriod
// after SIGTERM, so it must cover everything the bridge does in between:
// the drain of queued events (BRIDGE_SHUTDOWN_TIMEOUT), the release of the
// Lease (bounded by BRIDGE_LEASE_RENEW_DEADLINE) and the NATS drain. A
// leader killed before it releases the Lease leaves the standby waiting
// for the Lease to expire.
func checkGracePeriod(t *testing.T, bc bridgeContainer, cfg *config.Config) {
	t.Helper()
	need := cfg.ShutdownTimeout + natsDrainTimeout
	what := fmt.Sprintf("BRIDGE_SHUTDOWN_TIMEOUT (%v) + the NATS drain (%v)", cfg.ShutdownTimeout, natsDrainTimeout)
	if cfg.LeaderElection {
		need += cfg.LeaseRenewDeadline
		what += fmt.Sprintf(" + the Lease release (BRIDGE_LEASE_RENEW_DEADLINE, %v)", cfg.LeaseRenewDeadline)
	}
	if grace := time.Duration(bc.grace) * time.Second; grace <= need {
		t.Errorf("%s: terminationGracePeriodSeconds %d must exceed %s = %v", bc.workload, bc.grace, what, need)
	}
}

// TestHighAvailability: with leader election on, the bridge runs as two
// replicas (a leader and a hot standby) that a rollout replaces one at a
// time, starting the new pod first, and that a node drain never evicts
// both of; the scheduler prefers to put them on different nodes without
// requiring it. Without leader election, one replica replaced with
// Recreate, since every replica would publish.
func TestHighAvailability(t *testing.T) {
	for _, b := range okBuilds(t) {
		t.Run(b.name, func(t *testing.T) {
			bc := bridgeOf(t, b)
			cfg, _ := bridgeConfig(t, b, bc)
			if sts, ok := bc.obj.(*appsv1.StatefulSet); ok {
				checkShards(t, b, bc, sts, cfg)
				return
			}
			d, ok := bc.obj.(*appsv1.Deployment)
			if !ok {
				t.Fatalf("%s: the bridge must run as a Deployment", bc.workload)
			}
			replicas := int32(1) // the API's default
			if d.Spec.Replicas != nil {
				replicas = *d.Spec.Replicas
			}
			if !cfg.LeaderElection {
				if replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
					t.Errorf("%s: %d replicas, strategy %q: without BRIDGE_LEADER_ELECTION every replica publishes; want 1 replica and Recreate", bc.workload, replicas, d.Spec.Strategy.Type)
				}
				return
			}
			if replicas != 2 {
				t.Errorf("%s: %d replicas, want 2: a leader and a hot standby", bc.workload, replicas)
			}
			checkRollout(t, d, int(replicas))
			checkDisruptionBudget(t, b, bc, int(replicas), 1)
			checkSpreading(t, bc)
		})
	}
}

// checkShards: a sharded bridge runs as a StatefulSet with leader election
// and two replicas per shard; the pods' ordinals give every shard two
// pods, each shard its own Lease; a rollout and a drain take one pod at a
// time, so every shard keeps a replica.
func checkShards(t *testing.T, b *build, bc bridgeContainer, sts *appsv1.StatefulSet, cfg *config.Config) {
	t.Helper()
	n := cfg.Shards
	if !cfg.LeaderElection {
		t.Errorf("%s: sharded without BRIDGE_LEADER_ELECTION: both replicas of a shard would publish", bc.workload)
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if int(replicas) != 2*n {
		t.Errorf("%s: %d replicas for BRIDGE_SHARDS=%d, want %d: a leader and a hot standby per shard", bc.workload, replicas, n, 2*n)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("%s: podManagementPolicy %q, want Parallel", bc.workload, sts.Spec.PodManagementPolicy)
	}
	if u := sts.Spec.UpdateStrategy; u.Type != "" && u.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		u.RollingUpdate != nil && u.RollingUpdate.MaxUnavailable != nil && u.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("%s: updateStrategy %+v, want RollingUpdate of one pod at a time", bc.workload, u)
	}
	// Each pod's shard and Lease, as the bridge resolves them from its
	// pod name.
	pods := map[int][]string{}
	leases := map[string]int{}
	env, _ := environment(t, b, bc)
	if env["NATS_URL"] == "" {
		env["NATS_URL"] = defaultNATSURL
	}
	for ordinal := range int(replicas) {
		env["POD_NAME"] = bc.podName(ordinal)
		c, err := loadBridgeConfig(t, b, bc, env)
		if err != nil {
			t.Fatalf("%s: pod %s: %v", bc.workload, env["POD_NAME"], err)
		}
		sh := c.Shard()
		pods[sh.Index] = append(pods[sh.Index], env["POD_NAME"])
		if prev, ok := leases[c.LeaseName]; ok && prev != sh.Index {
			t.Errorf("%s: shards %d and %d share the Lease %s", bc.workload, prev, sh.Index, c.LeaseName)
		}
		leases[c.LeaseName] = sh.Index
	}
	for i := range n {
		if len(pods[i]) != 2 {
			t.Errorf("%s: shard %d/%d has pods %v, want two", bc.workload, i, n, pods[i])
		}
	}
	checkDisruptionBudget(t, b, bc, int(replicas), int(replicas)-1)
	checkSpreading(t, bc)
}

// checkRollout: a rollout starts one extra pod at a time and stops an old
// one only once the new one is ready, so it never needs more than one
// extra pod and never has fewer ready bridges than replicas: whichever old
// pod it stops, a synced standby is there.
func checkRollout(t *testing.T, d *appsv1.Deployment, replicas int) {
	t.Helper()
	s := d.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil || s.RollingUpdate.MaxSurge == nil || s.RollingUpdate.MaxUnavailable == nil {
		t.Errorf("Deployment %s: strategy %q: want RollingUpdate with maxSurge and maxUnavailable set", d.Name, s.Type)
		return
	}
	// Rounded as the Deployment controller rounds them: surge up,
	// unavailability down.
	surge, err := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxSurge, replicas, true)
	if err != nil {
		t.Fatalf("Deployment %s: maxSurge: %v", d.Name, err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxUnavailable, replicas, false)
	if err != nil {
		t.Fatalf("Deployment %s: maxUnavailable: %v", d.Name, err)
	}
	if surge != 1 {
		t.Errorf("Deployment %s: maxSurge %s is %d pods of %d; want 1: the new pod starts (and syncs) before an old one stops, and never more than one extra pod", d.Name, s.RollingUpdate.MaxSurge.String(), surge, replicas)
	}
	if unavailable != 0 {
		t.Errorf("Deployment %s: maxUnavailable %s is %d pods of %d; want 0: an old pod stops only once its replacement is a ready standby", d.Name, s.RollingUpdate.MaxUnavailable.String(), unavailable, replicas)
	}
	if replicas-unavailable < 1 {
		t.Errorf("Deployment %s: a rollout may have %d ready bridges", d.Name, replicas-unavailable)
	}
}

// checkDisruptionBudget: one policy/v1 PodDisruptionBudget selects the
// bridge's pods, and nothing else of the build, and keeps one of them
// while letting the other go.
func checkDisruptionBudget(t *testing.T, b *build, bc bridgeContainer, replicas, wantKept int) {
	t.Helper()
	var budgets []*policyv1.PodDisruptionBudget
	for _, p := range ofType[*policyv1.PodDisruptionBudget](b) {
		if p.Namespace == bc.namespace && selects(p.Spec.Selector, bc.pod.Labels) {
			budgets = append(budgets, p)
		}
	}
	if len(budgets) != 1 {
		t.Errorf("%d policy/v1 PodDisruptionBudgets select the bridge's pods (labels %v), want 1", len(budgets), bc.pod.Labels)
		return
	}
	p := budgets[0]
	where := "PodDisruptionBudget " + p.Name
	if sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector); err != nil || sel.Empty() {
		t.Errorf("%s: selector %v selects every pod of the namespace (%v)", where, p.Spec.Selector, err)
	}
	for _, o := range b.objects {
		if pod := podTemplate(o.obj); pod != nil && pod != bc.pod && o.m.GetNamespace() == p.Namespace && selects(p.Spec.Selector, pod.Labels) {
			t.Errorf("%s: also selects the pods of %s", where, o)
		}
	}
	// Rounded as the disruption controller rounds them: up.
	var kept int
	switch spec := p.Spec; {
	case spec.MinAvailable != nil && spec.MaxUnavailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, replicas, true)
		if err != nil {
			t.Fatalf("%s: minAvailable: %v", where, err)
		}
		kept = n
	case spec.MaxUnavailable != nil && spec.MinAvailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, replicas, true)
		if err != nil {
			t.Fatalf("%s: maxUnavailable: %v", where, err)
		}
		kept = replicas - n
	default:
		t.Fatalf("%s: set one of minAvailable and maxUnavailable", where)
	}
	if kept != wantKept {
		t.Errorf("%s: keeps %d of %d replicas; want %d: a drain may evict a shard's leader or its standby, never both", where, kept, replicas, wantKept)
	}
	if pol := p.Spec.UnhealthyPodEvictionPolicy; pol == nil || *pol != policyv1.AlwaysAllow {
		t.Errorf("%s: unhealthyPodEvictionPolicy %v, want AlwaysAllow: an unready bridge must not hold up a node drain", where, pol)
	}
}

// checkSpreading: a preferred (never required) anti-affinity on the node
// name between the bridge's pods, so that two nodes run the two replicas
// where there are two, and one node runs both where there is one; topology
// spread constraints, if any, never keep a pod from being scheduled.
func checkSpreading(t *testing.T, bc bridgeContainer) {
	t.Helper()
	spec := &bc.pod.Spec
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("%s: no pod anti-affinity: both replicas may land on one node", bc.workload)
		return
	}
	anti := spec.Affinity.PodAntiAffinity
	if len(anti.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		t.Errorf("%s: required pod anti-affinity: on a one-node cluster the second replica (and a rollout's extra pod) would never be scheduled; make it preferred", bc.workload)
	}
	found := false
	for _, w := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
		term := w.PodAffinityTerm
		if w.Weight > 0 && term.TopologyKey == hostnameKey && selects(term.LabelSelector, bc.pod.Labels) &&
			term.NamespaceSelector == nil && (len(term.Namespaces) == 0 || (len(term.Namespaces) == 1 && term.Namespaces[0] == bc.namespace)) {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: no preferred pod anti-affinity term on %s that selects the bridge's own pods (labels %v) in its namespace", bc.workload, hostnameKey, bc.pod.Labels)
	}
	for _, c := range spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("%s: topology spread on %s is %s: want ScheduleAnyway, so that it never leaves a replica pending", bc.workload, c.TopologyKey, c.WhenUnsatisfiable)
		}
		if !selects(c.LabelSelector, bc.pod.Labels) {
			t.Errorf("%s: topology spread on %s does not select the bridge's pods (labels %v)", bc.workload, c.TopologyKey, bc.pod.Labels)
		}
	}
}

// selects reports whether sel, a selector of the Kubernetes API (nil
// selects nothing), selects a pod with labels lbls.
func selects(sel *metav1.LabelSelector, lbls map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(lbls))
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestShardedRehearsal deploys overlays/with-nats with components/shards
// on top (what overlays/sharded adds to the base) and runs the bridge
// StatefulSet's six pods as TestDeploymentRehearsal runs the Deployment's:
// from the image, in-cluster, sandboxed, each named by its ordinal as the
// StatefulSet controller names it, which is where a pod learns its shard.
//
// Checked: every pod becomes ready; each shard's Lease is held by one of
// its two pods (ordinal mod 3), the only one reporting kubebridge_leader
// 1; a ConfigMap created in a namespace of each shard reaches the stream
// carrying that shard; after a SIGKILL of one shard's leader its standby
// takes over and publishes the shard's next change in a newer term; and
// SIGTERM stops every pod with exit 0.
func TestShardedRehearsal(t *testing.T) {
	t.Parallel()
	ctx, cancel := rehearsalContext(t)
	defer cancel()
	r := newRehearsal(ctx, t, shardedOverlay(t))

	sts, err := r.cs.AppsV1().StatefulSets(r.id).Get(ctx, "kubebridge", metav1.GetOptions{})
	must(t, err)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 6 {
		t.Fatalf("the StatefulSet has %v replicas; components/shards runs 6 (3 shards of 2)", sts.Spec.Replicas)
	}
	for i := range int(*sts.Spec.Replicas) {
		r.pods = append(r.pods, r.startPodOf(sts.Namespace, &sts.Spec.Template.Spec, fmt.Sprintf("%s-%d", sts.Name, i)))
	}
	for _, p := range r.pods {
		r.waitReady(p, 3*time.Minute)
	}

	shards := r.byShard()
	if len(shards) != 3 {
		t.Fatalf("the pods are in %d shards, want 3", len(shards))
	}
	namespaces := r.namespacePerShard(shards)
	leaders := map[contract.Shard]*rehearsalPod{}
	for sh, sr := range shards {
		leader, standby := sr.leader()
		leaders[sh] = leader
		t.Logf("shard %s: Lease %s held by %s; %s stands by", sh, leader.cfg.LeaseName, leader.spec.name, standby.spec.name)
		cfg := leader.cfg
		prefix := cfg.SubjectPrefix + "." + cfg.ClusterName
		ns := namespaces[sh]
		cm, err := r.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}, metav1.CreateOptions{})
		must(t, err)
		msgs := r.waitChanges(ns, prefix, []expectedEvent{{prefix + ".core.v1.configmaps." + ns + ".hello", contract.TypeAdded, cm.ResourceVersion, "ConfigMap", "hello"}})
		if got := msgs[len(msgs)-1].Ext(contract.ExtShard); got != sh.String() {
			t.Errorf("the change in namespace %s (shard %s) carries shard %q", ns, sh, got)
		}
	}

	// One shard loses its leader; the other shards' leaders stay.
	victim := contract.Shard{Index: 1, Count: 3}
	sr := shards[victim]
	_, standby := sr.leader()
	sr.checkTakeover(leaders[victim], standby, namespaces[victim])
	for sh, leader := range leaders {
		if sh != victim && !leaderStill(shards[sh], leader) {
			t.Errorf("shard %s: %s no longer leads after another shard's leader was killed", sh, leader.spec.name)
		}
	}

	r.stopPods(&sts.Spec.Template.Spec)
}

// shardedOverlay writes an overlay of the rehearsed one with the shards
// component, and returns its directory.
func shardedOverlay(t *testing.T) string {
	t.Helper()
	overlay := t.TempDir()
	kdir := filepath.Join(deployModuleRoot(t), "deploy", "kustomize")
	// kustomize takes a base and a component by a relative path only.
	base, err := filepath.Rel(overlay, filepath.Join(kdir, filepath.FromSlash(rehearsalOverlay)))
	must(t, err)
	component, err := filepath.Rel(overlay, filepath.Join(kdir, "components", "shards"))
	must(t, err)
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n", base, component)
	must(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644))
	return overlay
}

// byShard splits the rehearsal's pods by the shard their settings name,
// each part a rehearsal of its own for leader and checkTakeover.
func (r *rehearsal) byShard() map[contract.Shard]*rehearsal {
	shards := map[contract.Shard]*rehearsal{}
	for _, p := range r.pods {
		sh := p.cfg.Shard()
		if shards[sh] == nil {
			part := *r
			part.pods = nil
			shards[sh] = &part
		}
		shards[sh].pods = append(shards[sh].pods, p)
	}
	for sh, sr := range shards {
		if len(sr.pods) != 2 {
			r.t.Fatalf("shard %s has %d pods, want 2", sh, len(sr.pods))
		}
	}
	return shards
}

// namespacePerShard creates namespaces until each shard owns one.
func (r *rehearsal) namespacePerShard(shards map[contract.Shard]*rehearsal) map[contract.Shard]string {
	owned := map[contract.Shard]string{}
	for tries := 0; len(owned) < len(shards); tries++ {
		if tries == 50 {
			r.t.Fatalf("50 namespaces, and shards %v own none", owned)
		}
		ns := r.appNamespace()
		for sh := range shards {
			if shard.Owns(sh, ns, "") && owned[sh] == "" {
				owned[sh] = ns
			}
		}
	}
	return owned
}

// leaderStill reports whether p still holds its shard's Lease.
func leaderStill(sr *rehearsal, p *rehearsalPod) bool {
	leader, _ := sr.leader()
	return leader == p
}

package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// TestVerify replays a stream the real bridge wrote (a start-up snapshot
// and live changes): the contract holds and the replayed state equals the
// apiserver's. It changes the cluster with no bridge running and verify
// --against-cluster names the objects that differ. Then it plants, one
// after the other, a regression, a duplicate id (a re-publish after the
// de-duplication window), an end marker without its begin, an item
// outside its snapshot, a stale re-publish and a copy without
// Nats-Msg-Id, and verify reports each at its sequence and exits 1.
func TestVerify(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	ctx := context.Background()
	cms := h.cs.CoreV1().ConfigMaps(ns)
	created := map[string]string{} // name → rv at creation
	create := func(name string) *corev1.ConfigMap {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[name] = cm.ResourceVersion
		return cm
	}
	update := func(name string) *corev1.ConfigMap {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] += "+"
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	for i := range 6 {
		create(fmt.Sprintf("c-%d", i))
	}
	labels := map[string]string{"app": "web"}
	if _, err := h.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := h.runBridge("configmaps; deployments.apps", ns)

	// Live changes, stored before the bridge stops.
	cmRes := &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	subject := func(name string) string { return h.subjects().Object(cmRes.Type(), ns, name) }
	for _, name := range []string{"c-6", "c-7"} {
		h.waitStored(subject(name), contract.TypeAdded, create(name).ResourceVersion)
	}
	for _, name := range []string{"c-1", "c-2"} {
		h.waitStored(subject(name), contract.TypeUpdated, update(name).ResourceVersion)
	}
	if err := cms.Delete(ctx, "c-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitStored(subject("c-0"), contract.TypeDeleted, "")
	stop()

	// The clean stream.
	st, err := h.js.Stream(ctx, h.stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := h.verify(0)
	// c-0's delete rolled its subject up: its item is gone (5 of 6).
	if got, want := r.typeLine("configmaps.v1"), "added 2 updated 2 deleted 1 items 5 snapshots 1 objects 7"; got != want {
		t.Errorf("configmaps: %s, want %s", got, want)
	}
	if got, want := r.typeLine("deployments.v1.apps"), "added 0 updated 0 deleted 0 items 1 snapshots 1 objects 1"; got != want {
		t.Errorf("deployments: %s, want %s", got, want)
	}
	if r.Messages != info.State.Msgs || len(r.Findings) != 0 || r.Breaches != 0 {
		t.Errorf("clean stream: %d messages (the stream holds %d), findings %q", r.Messages, info.State.Msgs, r.findings())
	}
	if res := h.run("verify"); res.code != 0 || !strings.Contains(res.stdout, "Result: the contract holds in") {
		t.Errorf("verify of a clean stream: %s", res)
	}
	if r := h.verify(0, "--against-cluster", "-n", ns); r.Differences != 0 || len(r.Against) != 2 {
		t.Errorf("clean stream against the cluster: %d differences in %d types", r.Differences, len(r.Against))
	}
	if r := h.verify(0, "deploy"); len(r.Types) != 1 || r.Types[0].Type != "deployments.v1.apps" {
		t.Errorf("verify deploy checked %v", r.Types)
	}

	// The cluster changes while no bridge publishes.
	if err := cms.Delete(ctx, "c-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	update("c-4")
	create("c-new")
	// The contract holds: only the differences make verify fail.
	r = h.verify(1, "--against-cluster", "-n", ns)
	var diffs []string
	for _, d := range r.Against {
		for _, m := range d.Missing {
			diffs = append(diffs, d.Type+" missing "+m.Key)
		}
		for _, x := range d.Extra {
			diffs = append(diffs, d.Type+" extra "+x.Key)
		}
		for _, x := range d.Differ {
			diffs = append(diffs, d.Type+" differs "+x.Key)
		}
	}
	if got, want := strings.Join(diffs, ", "), fmt.Sprintf("configmaps.v1 missing %[1]s/c-new, configmaps.v1 extra %[1]s/c-3, configmaps.v1 differs %[1]s/c-4", ns); got != want || r.Differences != 3 || r.Breaches != 0 {
		t.Errorf("against the cluster: %s (%d differences), want %s", got, r.Differences, want)
	}
	res := h.run("verify", "configmaps", "--against-cluster", "-n", ns)
	if res.code != 1 || !strings.Contains(res.stdout, "missing  "+ns+"/c-new") || !strings.Contains(res.stdout, "Result: 3 objects differ from the cluster.") {
		t.Errorf("verify's text report against the cluster: %s", res)
	}

	// Plants, written as the bridge writes: pkg/encode, in the current term.
	term := h.lastOn(h.subjects().Term()).Sequence
	enc := &encode.Encoder{Subjects: h.subjects(), Term: term}
	publish := func(c informers.Change) uint64 {
		t.Helper()
		c.Resource, c.ObservedAt = cmRes, time.Now()
		e, err := enc.EncodeWithin(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := h.js.PublishMsg(ctx, e.Msg)
		if err != nil || ack.Duplicate {
			t.Fatalf("publish %s: %v (duplicate %v)", e.ID, err, ack != nil && ack.Duplicate)
		}
		return ack.Sequence
	}
	current := func(name string) *corev1.ConfigMap {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	var want []string
	check := func(what string) {
		t.Helper()
		r := h.verify(1)
		if got := r.findings(); got != strings.Join(want, " ") || r.Breaches != len(want) {
			t.Errorf("after %s: findings %q (%d breaches), want %q", what, got, r.Breaches, want)
		}
	}

	// A regression: an update of c-1 back to the state it was created in.
	old := current("c-1")
	old.ResourceVersion = created["c-1"]
	want = append(want, fmt.Sprintf("regression@%d", publish(informers.Change{Verb: informers.Updated, Object: old, OldObject: current("c-1")})))
	check("a regression")
	if res := h.run("verify"); res.code != 1 || !strings.Contains(res.stdout, "Result: the stream breaks the contract: 1 regression.") ||
		!strings.Contains(res.stdout, "regression") || !strings.Contains(res.stdout, "resourceVersion "+created["c-1"]+" after") {
		t.Errorf("verify's text report of a regression: %s", res)
	}

	// A duplicate: c-2's last event stored again once JetStream's window
	// no longer remembers its Nats-Msg-Id, as a re-publish after a long
	// outage would be.
	// The window is shortened twice: nats-server re-arms its purge timer
	// on an update before it takes the new window, so the first purge may
	// still use the old one (two minutes); the second update's purge runs
	// with a short window either way.
	cfg := info.Config
	for _, w := range []time.Duration{100 * time.Millisecond, 150 * time.Millisecond} {
		cfg.Duplicates = w
		if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	dup := h.republish(h.lastOn(subject("c-2")).Sequence, nil)
	want = append(want, fmt.Sprintf("duplicate-id@%d", dup))
	check("a duplicate id")

	// An end marker whose begin was never stored.
	want = append(want, fmt.Sprintf("end-without-begin@%d", publish(informers.Change{Verb: informers.SnapshotEnd, SnapshotID: "planted"})))
	check("an end marker without its begin")

	// An item of no open snapshot.
	want = append(want, fmt.Sprintf("unframed-item@%d", publish(informers.Change{Verb: informers.SnapshotItem, Object: current("c-5"), SnapshotID: "stray"})))
	check("an item outside its snapshot")

	// A stale re-publish: c-1's start-up snapshot item again, after its
	// update. The Applier sees a regression; the id check sees the id
	// stored twice, the framing check an item after its snapshot ended.
	var itemSeq uint64
	for seq := uint64(1); itemSeq == 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err == nil && m.Subject == subject("c-1") && m.Header.Get("ce-type") == contract.TypeSnapshotItem {
			itemSeq = seq
		}
	}
	stale := h.republish(itemSeq, nil)
	want = append(want, fmt.Sprintf("regression@%d", stale), fmt.Sprintf("duplicate-id@%d", stale), fmt.Sprintf("unframed-item@%d", stale))
	check("a stale re-publish")

	// A copy of c-7's event without Nats-Msg-Id, which JetStream cannot
	// de-duplicate.
	noID := h.republish(h.lastOn(subject("c-7")).Sequence, func(hd nats.Header) { hd.Del(contract.HeaderMsgID) })
	want = append(want, fmt.Sprintf("duplicate-id@%d", noID), fmt.Sprintf("msg-id-mismatch@%d", noID))
	check("a message without Nats-Msg-Id")

	// A stream that is not there could not be verified.
	if res := h.run("verify", "--stream", "NOPE"); res.code != 2 {
		t.Errorf("verify of a missing stream: %s", res)
	}
}

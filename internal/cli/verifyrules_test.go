package cli_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// TestVerifyWithinRules: a stream written as a bridge with rules writes it
// (contract §11, §12), the frontend ConfigMaps of a namespace without
// their heartbeat annotation, and begin markers saying so. verify
// --against-cluster lists the cluster within the rules: it projects
// and matches the list, and compares content rather than
// resourceVersions, so a heartbeat (which the bridge holds back) is no
// difference, while a change of data, an object entering match and one
// leaving it are.
func TestVerifyWithinRules(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		heartbeat = "example.com/heartbeat"
		match     = "object.metadata.labels['tier'] == 'frontend'"
	)
	cms := h.cs.CoreV1().ConfigMaps(ns)
	for name, tier := range map[string]string{"front-1": "frontend", "front-2": "frontend", "back-1": "backend"} {
		h.createConfigMap(ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": tier},
			Annotations: map[string]string{heartbeat: "0", "keep": "me"}}, Data: map[string]string{"v": "0"}})
	}
	change := func(name string, mod func(*corev1.ConfigMap)) {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mod(cm)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{Name: h.stream, Subjects: []string{h.prefix + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	enc := &encode.Encoder{Subjects: h.subjects()}
	cmRes := &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	publish := func(c informers.Change, mod func(nats.Header)) {
		t.Helper()
		c.Resource, c.ObservedAt = cmRes, time.Now()
		e, err := enc.EncodeWithin(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(e.Msg.Header)
		}
		if _, err := h.js.PublishMsg(ctx, e.Msg); err != nil {
			t.Fatal(err)
		}
	}
	// The items as the bridge publishes them: projected.
	projected := func(name string) *corev1.ConfigMap {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(cm.Annotations, heartbeat)
		cm.ManagedFields = nil
		return cm
	}
	publish(informers.Change{Verb: informers.SnapshotBegin, SnapshotID: "s1", Scope: informers.Scope{Namespaces: []string{ns}}}, func(hd nats.Header) {
		hd.Set(contract.Header(contract.ExtScopeMatch), match)
		hd.Set(contract.Header(contract.ExtScopeIgnoreFields), `[["metadata","annotations","`+heartbeat+`"]]`)
	})
	publish(informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s1", Object: projected("front-1")}, nil)
	publish(informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s1", Object: projected("front-2")}, nil)
	publish(informers.Change{Verb: informers.SnapshotEnd, SnapshotID: "s1", SnapshotCount: 2}, nil)

	keys := func(refs []struct {
		Key string `json:"key"`
	}) string {
		var out []string
		for _, r := range refs {
			out = append(out, r.Key)
		}
		return strings.Join(out, ",")
	}
	r := h.verify(0, "--against-cluster", "configmaps")
	d := r.Against[0]
	if want := "namespaces " + ns + "; match " + match + `; ignoreFields [["metadata","annotations","` + heartbeat + `"]]`; d.Scope != want {
		t.Errorf("scope %q, want %q", d.Scope, want)
	}
	if d.InCluster != 2 || r.Differences != 0 {
		t.Fatalf("%d listed within the rules (want 2: back-1 is out of match), %d differences: %+v", d.InCluster, r.Differences, d)
	}

	// A heartbeat: the bridge holds the update back (its projected objects
	// differ in the resourceVersion only), so the stream's resourceVersion
	// lags, and that is no difference.
	change("front-1", func(cm *corev1.ConfigMap) { cm.Annotations[heartbeat] = "1" })
	if r := h.verify(0, "--against-cluster", "configmaps"); r.Differences != 0 {
		t.Errorf("after a heartbeat: %d differences: %+v", r.Differences, r.Against[0])
	}

	// A change the stream does not have, an object entering match and one
	// leaving it.
	change("front-2", func(cm *corev1.ConfigMap) { cm.Data["v"] = "1" })
	change("back-1", func(cm *corev1.ConfigMap) { cm.Labels["tier"] = "frontend" })
	change("front-1", func(cm *corev1.ConfigMap) { cm.Labels["tier"] = "backend" })
	r = h.verify(1, "--against-cluster", "configmaps")
	d = r.Against[0]
	var differ []string
	for _, x := range d.Differ {
		differ = append(differ, x.Key+" "+x.Fields)
	}
	if got := keys(d.Missing); got != ns+"/back-1" {
		t.Errorf("missing %q, want back-1, which entered match", got)
	}
	if got := keys(d.Extra); got != ns+"/front-1" {
		t.Errorf("extra %q, want front-1, which left match", got)
	}
	if want := []string{ns + "/front-2 data.v"}; !slices.Equal(differ, want) || r.Differences != 3 {
		t.Errorf("differ %q (%d differences), want %q and 3", differ, r.Differences, want)
	}
	if res := h.run("verify", "--against-cluster", "configmaps"); !strings.Contains(res.stdout, "1 at another uid or content") ||
		!strings.Contains(res.stdout, "differs  "+ns+"/front-2: ") || !strings.Contains(res.stdout, ": data.v\n") {
		t.Errorf("the text report:\n%s", res)
	}
}

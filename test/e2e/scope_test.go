package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestScope checks what a bridge watches: only its namespaces, only
// objects matching its label or field selector; and that short names and
// resource.group names resolve while an unknown name fails start-up.
func TestScope(t *testing.T) {
	t.Run("NamespacesAndNames", func(t *testing.T) {
		h := newHarness(t)
		other := h.newNamespace()
		for _, ns := range []string{h.ns, other} {
			h.createCM(ns, "before", nil, map[string]string{"k": "v"})
			h.createDeployment(ns, "web")
		}
		// cm is a short name; deployments.apps and deploy name the same type
		// and share one informer. The namespace is set per entry (with both
		// spellings of the option), not through BRIDGE_NAMESPACES.
		b := h.startBridge(map[string]string{
			"BRIDGE_NAMESPACES": "",
			"BRIDGE_RESOURCES":  "cm | namespaces=" + h.ns + "\n deployments.apps | ns=" + h.ns + "\n deploy | namespaces=" + h.ns,
		})
		if n := b.countLog(`"Watching"`); n != 2 {
			t.Errorf("bridge logged %d \"Watching\" lines, want 2 (configmaps, deployments)", n)
		}
		if n := b.countLog(`as=["deployments.apps","deploy"]`); n != 1 {
			t.Errorf("bridge did not log one informer for deployments.apps and deploy")
		}
		for _, ns := range []string{h.ns, other} {
			h.createCM(ns, "after", nil, map[string]string{"k": "v"})
			h.createDeployment(ns, "api")
		}
		cmType, depType := h.cmType(), h.typeSubject("apps", "v1", "deployments")
		msgs := h.waitStream("the objects created after the start", 30*time.Second, func(m []replay.Message) string {
			if len(onSubject(m, h.cmSubject(h.ns, "after"))) == 0 {
				return "no event for configmap after"
			}
			if len(onSubject(m, depType+"."+h.ns+".api")) == 0 {
				return "no event for deployment api"
			}
			return ""
		})
		for _, m := range msgs {
			if strings.Contains(m.Subject, "."+other+".") || m.Ext(contract.ExtNamespace) == other || strings.Contains(string(m.Data), other) {
				t.Errorf("seq %d %s %s: object of namespace %s, which the bridge does not watch", m.Seq, m.Event.Type(), m.Subject, other)
			}
		}
		for _, typ := range []string{cmType, depType} {
			if got := len(ofType(msgs, contract.TypeSnapshotBegin, typ+".")); got != 1 {
				t.Errorf("%d start-up snapshots of %s, want 1 (one informer per type)", got, typ)
			}
		}
		// Exactly: a snapshot item and an added event for each type.
		want := map[string]string{
			h.cmSubject(h.ns, "before"):   contract.TypeSnapshotItem,
			h.cmSubject(h.ns, "after"):    contract.TypeAdded,
			depType + "." + h.ns + ".web": contract.TypeSnapshotItem,
			depType + "." + h.ns + ".api": contract.TypeAdded,
		}
		var objs []replay.Message
		for _, m := range msgs {
			if m.Event.Type() != contract.TypeSnapshotBegin && m.Event.Type() != contract.TypeSnapshotEnd && m.Event.Type() != contract.TypeTerm {
				objs = append(objs, m)
			}
		}
		if len(objs) != len(want) {
			t.Errorf("%d object events, want %d:\n%s", len(objs), len(want), describe(msgs))
		}
		for _, m := range objs {
			if want[m.Subject] != m.Event.Type() {
				t.Errorf("unexpected %s on %s", m.Event.Type(), m.Subject)
			}
		}
		dep := onSubject(msgs, depType+"."+h.ns+".api")
		if len(dep) == 1 {
			checkEq(t, "deployment kind", dep[0].Ext(contract.ExtKind), "Deployment")
			checkEq(t, "deployment apiversion", dep[0].Ext(contract.ExtAPIVersion), "apps/v1")
			checkEq(t, "deployment source", dep[0].Event.Source(), "k8s://e2e/apis/apps/v1/namespaces/"+h.ns+"/deployments")
		}
	})

	t.Run("LabelSelector", func(t *testing.T) {
		h := newHarness(t)
		a := map[string]string{"team": "a"}
		bl := map[string]string{"team": "b"}
		a1 := h.createCM(h.ns, "a1", a, nil)
		b1 := h.createCM(h.ns, "b1", bl, nil)
		h.createCM(h.ns, "none", nil, nil)
		h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps | labels=team=a"})
		h.createCM(h.ns, "a2", a, nil)
		h.createCM(h.ns, "b2", bl, nil)
		// b1 starts matching, a1 stops matching.
		b1 = b1.DeepCopy()
		b1.Labels = a
		h.updateCM(b1)
		a1 = a1.DeepCopy()
		a1.Labels = bl
		h.updateCM(a1)
		sel := metav1.ListOptions{LabelSelector: "team=a"}
		msgs, _ := h.convergeTo(h.cmType(), func() map[string]string { return h.listConfigMaps(h.ns, sel) }, nil)
		for _, m := range msgs {
			switch m.Ext(contract.ExtName) {
			case "b2", "none":
				t.Errorf("seq %d %s for %s, which never matched team=a", m.Seq, m.Event.Type(), m.Subject)
			}
		}
		defer logOnFailure(t, msgs)
		// a1 leaving the selection is a delete, b1 entering it an add.
		if len(ofType(onSubject(msgs, h.cmSubject(h.ns, "a1")), contract.TypeDeleted, "")) != 1 {
			t.Errorf("a1 left the selection without a deleted event")
		}
		if len(ofType(onSubject(msgs, h.cmSubject(h.ns, "b1")), contract.TypeAdded, "")) != 1 {
			t.Errorf("b1 entered the selection without an added event")
		}
	})

	t.Run("FieldSelector", func(t *testing.T) {
		h := newHarness(t)
		keep := h.createCM(h.ns, "keep", nil, map[string]string{"k": "1"})
		other := h.createCM(h.ns, "other", nil, map[string]string{"k": "1"})
		h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps | fields=metadata.name=keep"})
		other = other.DeepCopy()
		other.Data["k"] = "2"
		h.updateCM(other)
		h.createCM(h.ns, "other2", nil, nil)
		keep = keep.DeepCopy()
		keep.Data["k"] = "2"
		h.updateCM(keep)
		msgs := h.waitStream("the update of keep", 30*time.Second, func(m []replay.Message) string {
			if len(ofType(m, contract.TypeUpdated, h.cmSubject(h.ns, "keep"))) == 0 {
				return "no updated event for keep"
			}
			return ""
		})
		for _, m := range msgs {
			if n := m.Ext(contract.ExtName); n != "" && n != "keep" {
				t.Errorf("seq %d %s for %s, which does not match metadata.name=keep", m.Seq, m.Event.Type(), m.Subject)
			}
		}
		if len(ofType(msgs, contract.TypeSnapshotItem, "")) != 1 {
			t.Errorf("start-up snapshot does not hold exactly keep:\n%s", describe(msgs))
		}
	})

	t.Run("UnknownResource", func(t *testing.T) {
		h := newHarness(t)
		b := h.launchBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps; frobnicators"})
		b.stopped.Store(true)
		code, ok := b.waitExit(60 * time.Second)
		if !ok {
			t.Fatal("bridge with an unknown resource type still running after 60s")
		}
		if code != 2 {
			t.Errorf("exit code %d, want 2 (configuration error)", code)
		}
		// klog also writes to stderr; the error report is what remains.
		raw, _ := os.ReadFile(b.stderr)
		stderr := string(raw)
		var report []string
		for _, l := range lines(stderr) {
			if !klogLine.MatchString(l) {
				report = append(report, l)
			}
		}
		if len(report) != 1 || !strings.Contains(report[0], "frobnicators") {
			t.Errorf("stderr (besides log lines) is %d lines, want one naming frobnicators:\n%s", len(report), stderr)
		} else {
			t.Logf("stderr report: %s", report[0])
		}
	})
}

// createDeployment creates a minimal Deployment (nothing runs it: the
// environment has no controllers).
func (h *harness) createDeployment(ns, name string) *appsv1.Deployment {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	labels := map[string]string{"app": name}
	d, err := h.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create deployment %s/%s: %v", ns, name, err)
	}
	return d
}

package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVerifyWithinScope runs a bridge that watches the ConfigMaps labelled
// team=a of one namespace. Its begin markers carry that scope, and verify
// --against-cluster, without -n, compares the stream with the cluster
// within it: it exits 0 although ConfigMaps of other labels and of other
// namespaces exist, and once an object in the scope is created while no
// bridge runs, it exits 1 naming only that one.
func TestVerifyWithinScope(t *testing.T) {
	h := newHarness(t)
	ns, other := h.namespace(), h.namespace()
	ctx := context.Background()
	create := func(ns, name, team string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}}
		if _, err := h.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(ns, "a-1", "a")
	create(ns, "a-2", "a")
	create(ns, "b-1", "b")
	create(other, "a-1", "a")
	h.runBridge("configmaps | labels=team=a", ns)()

	r := h.verify(0, "--against-cluster", "configmaps")
	if len(r.Against) != 1 {
		t.Fatalf("%d types compared, want 1", len(r.Against))
	}
	d := r.Against[0]
	if want := fmt.Sprintf("namespaces %s; labels team=a", ns); d.Scope != want || d.InCluster != 2 || r.Differences != 0 {
		t.Errorf("against the cluster: scope %q (want %q), %d listed (want 2), %d differences", d.Scope, want, d.InCluster, r.Differences)
	}

	create(ns, "a-3", "a")
	create(ns, "b-3", "b")
	create(other, "a-3", "a")
	r = h.verify(1, "--against-cluster", "configmaps")
	var missing []string
	for _, m := range r.Against[0].Missing {
		missing = append(missing, m.Key)
	}
	if got, want := strings.Join(missing, ","), ns+"/a-3"; got != want || r.Differences != 1 {
		t.Errorf("missing %q, want %q; %d differences", got, want, r.Differences)
	}
	if res := h.run("verify", "--against-cluster", "configmaps"); !strings.Contains(res.stdout, "within the bridge's scope: namespaces "+ns+"; labels team=a") {
		t.Errorf("the report does not say the scope:\n%s", res.stdout)
	}
}

package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
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
	create := func(ns, name, team string) {
		t.Helper()
		h.createConfigMap(ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}})
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

// TestVerifyRefusesAnUnknownContract: a stream whose term marker says a
// major contract version verify does not know is refused with exit 2 and
// one line saying why, not checked against rules it may not follow; a
// newer minor version is read.
func TestVerifyRefusesAnUnknownContract(t *testing.T) {
	for _, tc := range []struct {
		version string
		code    int
	}{{"1.9", 0}, {"2.0", 2}} {
		t.Run(tc.version, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{Name: h.stream, Subjects: []string{h.prefix + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
				t.Fatal(err)
			}
			enc := &encode.Encoder{Subjects: contract.Subjects{Prefix: h.prefix, Cluster: cluster}}
			m, err := enc.TermMarker(contract.TermData{Holder: "a"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			m.Header.Set("ce-"+contract.ExtContractVersion, tc.version)
			if _, err := h.js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			res := h.run("verify")
			if res.code != tc.code {
				t.Fatalf("verify of a stream of contract %s: %s", tc.version, res)
			}
			if tc.code == 2 && !strings.Contains(res.stderr, "says 2.0; this reader knows 1.x") {
				t.Errorf("verify does not say why:\n%s", res)
			}
		})
	}
}

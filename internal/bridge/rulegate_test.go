package bridge

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/rules"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// recordingQueue is an intakeQueue that records what it is given.
type recordingQueue struct {
	added, withheld []informers.Change
}

func (q *recordingQueue) Add(c informers.Change)      { q.added = append(q.added, c) }
func (q *recordingQueue) Withhold(c informers.Change) { q.withheld = append(q.withheld, c) }

// newTestRuleGate is a gate for configmaps with rules spec, its queue and
// what it logged.
func newTestRuleGate(t *testing.T, spec rules.Spec) (*ruleGate, *recordingQueue, *strings.Builder, metrics.Rules) {
	t.Helper()
	r, err := rules.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	q := &recordingQueue{}
	logger := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	m := metrics.New().Rules([]string{configMaps.String()})
	return newRuleGate(configMaps, r, q, m, logger), q, &logged, m
}

// ruleCM is a ConfigMap as ruleTransform caches it: unstructured.
func ruleCM(t *testing.T, name, rv, tier, data string) runtime.Object {
	t.Helper()
	cm := testCM("ns", name, rv)
	cm.Labels = map[string]string{"tier": tier}
	cm.Data = map[string]string{"k": data}
	u, err := ruleTransform(nil, configMaps, nil)(cm)
	if err != nil {
		t.Fatal(err)
	}
	return u.(runtime.Object)
}

const frontendOnly = "object.metadata.labels['tier'] == 'frontend'"

// cacheForms are the forms a type's objects are cached in with rules: the
// Unstructured ruleTransform makes, and, for a dynamic informer's type,
// the compact form made of it, which the gate decodes.
func cacheForms(t *testing.T) map[string]func(runtime.Object) runtime.Object {
	return map[string]func(runtime.Object) runtime.Object{
		"unstructured": func(o runtime.Object) runtime.Object { return o },
		"compact": func(o runtime.Object) runtime.Object {
			c, err := informers.NewCompact(o.(*unstructured.Unstructured))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
}

// Membership: an update that leaves match is a delete of the object as it
// is now, one that enters it an add; changes wholly outside are counted
// and dropped; adds and deletes pass only in scope.
func TestRuleGateMembership(t *testing.T) {
	for form, cached := range cacheForms(t) {
		t.Run(form, func(t *testing.T) {
			g, q, _, m := newTestRuleGate(t, rules.Spec{Match: frontendOnly, OldObject: true})
			cm := func(name, rv, tier, data string) runtime.Object { return cached(ruleCM(t, name, rv, tier, data)) }
			in1, out2 := cm("a", "1", "frontend", "x"), cm("a", "2", "backend", "x")
			in3 := cm("a", "3", "frontend", "x")
			g.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: in1})
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: out2, OldObject: in1})
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: cm("a", "2b", "backend", "y"), OldObject: out2})
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: in3, OldObject: out2})
			g.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: cm("b", "4", "backend", "x")})
			g.Add(informers.Change{Verb: informers.Deleted, Resource: configMaps, Object: cm("b", "5", "backend", "x")})
			var got []string
			for _, c := range q.added {
				got = append(got, string(c.Verb)+" "+resourceVersion(c.Object)+" old="+resourceVersion(c.OldObject))
			}
			want := []string{"added 1 old=", "deleted 2 old=", "added 3 old="}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("handed on %q; want %q", got, want)
			}
			if n := testutil.ToFloat64(m.OutOfScope.WithLabelValues(configMaps.String())); n != 3 {
				t.Errorf("kubebridge_changes_out_of_scope_total %v; want 3", n)
			}
		})
	}
}

// An update that changed only ignored fields and the resourceVersion, or
// that when holds back, is withheld; any other is added.
func TestRuleGateWithholds(t *testing.T) {
	for form, cached := range cacheForms(t) {
		t.Run(form, func(t *testing.T) {
			g, q, _, m := newTestRuleGate(t, rules.Spec{IgnoreFields: [][]string{{"metadata", "labels"}}, When: "object.data != oldObject.data", OldObject: true})
			var logged []string
			g.logger = funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 6})
			project := func(o runtime.Object) runtime.Object {
				g.rules.Project(o.(*unstructured.Unstructured).Object)
				return cached(o)
			}
			v1, v2 := project(ruleCM(t, "a", "1", "frontend", "x")), project(ruleCM(t, "a", "2", "backend", "x"))
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: v2, OldObject: v1})
			v3 := project(ruleCM(t, "a", "3", "backend", "y"))
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: v3, OldObject: v2})
			v4 := ruleCM(t, "a", "4", "backend", "y")
			v4.(*unstructured.Unstructured).SetAnnotations(map[string]string{"note": "n"})
			g.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: cached(v4), OldObject: v3})
			if len(q.added) != 1 || resourceVersion(q.added[0].Object) != "3" {
				t.Errorf("added %d changes; want the data change to rv 3 alone", len(q.added))
			}
			if len(q.withheld) != 2 {
				t.Fatalf("withheld %d changes; want 2", len(q.withheld))
			}
			// At V(6) each withheld version is a line saying why.
			want := []string{`"resourceVersion"="2" "why"="nothing but ignored fields changed"`, `"resourceVersion"="4" "why"="when is false"`}
			if len(logged) != len(want) {
				t.Fatalf("logged %q at V(6); want a line for each withheld version", logged)
			}
			for i, w := range want {
				if !strings.Contains(logged[i], "Update withheld") || !strings.Contains(logged[i], w) {
					t.Errorf("line %d: %s; want one with %s", i, logged[i], w)
				}
			}
			for reason, want := range map[string]float64{"unchanged": 1, "when": 1} {
				if n := testutil.ToFloat64(m.Withheld.WithLabelValues(configMaps.String(), reason)); n != want {
					t.Errorf("kubebridge_changes_withheld_total{reason=%q} %v; want %v", reason, n, want)
				}
			}
		})
	}
}

// An expression that fails on an object publishes the change as if it
// were true, counts it, and logs it with the object's key.
func TestRuleGateFailsOpen(t *testing.T) {
	g, q, logged, m := newTestRuleGate(t, rules.Spec{Match: "object.metadata.annotations['team'] == 'a'", OldObject: true})
	g.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: ruleCM(t, "a", "1", "frontend", "x")})
	if len(q.added) != 1 {
		t.Fatalf("handed on %d changes; want the add, published as if the expression were true", len(q.added))
	}
	if n := testutil.ToFloat64(m.Errors.WithLabelValues(configMaps.String(), "match")); n != 1 {
		t.Errorf("kubebridge_rule_errors_total{rule=match} %v; want 1", n)
	}
	if !strings.Contains(logged.String(), `"object"="ns/a"`) {
		t.Errorf("logged %q; want a line naming the object", logged.String())
	}
}

// The transform converts a typed object to unstructured content with its
// apiVersion and kind, after the base transform, without the ignored
// fields; a tombstone passes as it is.
func TestRuleTransform(t *testing.T) {
	r, err := rules.Compile(rules.Spec{IgnoreFields: [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}}, OldObject: true})
	if err != nil {
		t.Fatal(err)
	}
	pods := &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}
	base := informers.TransformOptions{StripManagedFields: true}.Transform()
	pod := fixtures.Pod(1, 7)
	pod.Annotations["example.com/heartbeat"] = "now"
	out, err := ruleTransform(base, pods, r)(pod)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("transformed to %T; want *unstructured.Unstructured", out)
	}
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Pod" || u.GetName() != pod.Name || u.GetResourceVersion() != "7" {
		t.Errorf("transformed to %s %s %s rv %s", u.GetAPIVersion(), u.GetKind(), u.GetName(), u.GetResourceVersion())
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("status is still there")
	}
	if _, ok := u.GetAnnotations()["example.com/heartbeat"]; ok || u.GetAnnotations()["prometheus.io/scrape"] != "true" {
		t.Errorf("annotations %v; want the heartbeat gone and the others kept", u.GetAnnotations())
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "shop/x", Obj: u}
	if got, err := ruleTransform(base, pods, r)(tomb); err != nil || got != any(tomb) {
		t.Errorf("a tombstone transformed to %v, %v; want it as it is", got, err)
	}
	if _, err := ruleTransform(func(any) (any, error) { return nil, errors.New("boom") }, pods, r)(pod); err == nil {
		t.Error("the base transform's error was lost")
	}
}

// A snapshot and the missed-delete scan read only objects in scope.
func TestMatchingCache(t *testing.T) {
	g, _, _, _ := newTestRuleGate(t, rules.Spec{Match: frontendOnly, OldObject: true})
	c := matchingCache{syncedCache: fixtures.MapCache{"ns/in": ruleCM(t, "in", "1", "frontend", "x"), "ns/out": ruleCM(t, "out", "1", "backend", "x")}, gate: g}
	if _, ok := c.Get("ns/in"); !ok {
		t.Error("the object in scope reads as absent")
	}
	if _, ok := c.Get("ns/out"); ok {
		t.Error("the object out of scope reads as present")
	}
}

func resourceVersion(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	return obj.(interface{ GetResourceVersion() string }).GetResourceVersion()
}

package rules_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/rules"
)

// podContent is fixtures.Pod(i, rv) as unstructured content.
func podContent(tb testing.TB, i, rv int) map[string]any {
	tb.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fixtures.Pod(i, rv))
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// statusUpdate is a Pod and the same Pod after a kubelet's status update:
// the two differ only in status.
func statusUpdate(tb testing.TB) (obj, old map[string]any) {
	tb.Helper()
	old, obj = podContent(tb, 1, 100), podContent(tb, 1, 100)
	status := obj["status"].(map[string]any)
	status["podIP"] = "10.0.45.68"
	status["conditions"].([]any)[0].(map[string]any)["lastProbeTime"] = "2026-01-02T03:06:00Z"
	return obj, old
}

// BenchmarkWhenSpecChanged is one evaluation of the example
// predicate on a status update of a realistic Pod (fixtures.Pod, ~3 KB of
// JSON): the specs are compared in full, and are equal.
func BenchmarkWhenSpecChanged(b *testing.B) {
	r, err := rules.Compile(rules.Spec{OldObject: true, When: "object.spec != oldObject.spec"})
	if err != nil {
		b.Fatal(err)
	}
	obj, old := statusUpdate(b)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := r.Publishes(obj, old); ok || err != nil {
			b.Fatalf("Publishes = %v, %v; want false, nil", ok, err)
		}
	}
}

// BenchmarkMatchLabel is a typical match on the same Pod.
func BenchmarkMatchLabel(b *testing.B) {
	r, err := rules.Compile(rules.Spec{OldObject: true, Match: "object.metadata.labels['tier'] == 'backend'"})
	if err != nil {
		b.Fatal(err)
	}
	obj := podContent(b, 1, 100)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := r.Matches(obj); !ok || err != nil {
			b.Fatalf("Matches = %v, %v; want true, nil", ok, err)
		}
	}
}

// BenchmarkOnlyResourceVersionDiffers compares two such Pods in full.
func BenchmarkOnlyResourceVersionDiffers(b *testing.B) {
	old, obj := podContent(b, 1, 100), podContent(b, 1, 101)
	b.ReportAllocs()
	for b.Loop() {
		if !rules.OnlyResourceVersionDiffers(obj, old) {
			b.Fatal("OnlyResourceVersionDiffers = false")
		}
	}
}

// BenchmarkToUnstructuredPod is, for scale, the cost of turning the typed
// Pod into the unstructured content the rules work on.
func BenchmarkToUnstructuredPod(b *testing.B) {
	pod := fixtures.Pod(1, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod); err != nil {
			b.Fatal(err)
		}
	}
}

// The goal for the predicate is at most 5 allocations; it makes
// none.
func TestWhenSpecChangedAllocations(t *testing.T) {
	r, err := rules.Compile(rules.Spec{OldObject: true, When: "object.spec != oldObject.spec"})
	if err != nil {
		t.Fatal(err)
	}
	obj, old := statusUpdate(t)
	allocs := testing.AllocsPerRun(100, func() {
		if ok, err := r.Publishes(obj, old); ok || err != nil {
			t.Fatalf("Publishes = %v, %v; want false, nil", ok, err)
		}
	})
	if allocs > 5 {
		t.Errorf("%v allocations per evaluation, want at most 5", allocs)
	}
}

package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// BenchmarkWhenSpecChangedCELAdapter is BenchmarkWhenSpecChanged with
// CEL's own maps and lists instead of the adapter's, to show what the
// adapter saves.
func BenchmarkWhenSpecChangedCELAdapter(b *testing.B) {
	p, err := compileWith(nil, "when", "object.spec != oldObject.spec", options{costLimit: DefaultCostLimit}, varObject, varOldObject)
	if err != nil {
		b.Fatal(err)
	}
	old, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fixtures.Pod(1, 100))
	if err != nil {
		b.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fixtures.Pod(1, 100))
	if err != nil {
		b.Fatal(err)
	}
	obj["status"].(map[string]any)["podIP"] = "10.0.45.68"
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.eval(obj, old); ok || err != nil {
			b.Fatalf("eval = %v, %v; want false, nil", ok, err)
		}
	}
}

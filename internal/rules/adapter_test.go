package rules

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/cel-go/common/types"
)

// celObject is unstructured content exercising every kind of value it holds.
func celObject() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-1", "labels": map[string]any{"app": "web", "tier": "frontend"}},
		"spec": map[string]any{
			"replicas": int64(3), "ratio": 0.5, "paused": false, "nothing": nil,
			"containers": []any{
				map[string]any{"name": "web", "ports": []any{map[string]any{"containerPort": int64(8080)}}},
				map[string]any{"name": "sidecar", "ports": []any{}},
			},
			"names": []any{"b", "a", "c"},
			"nums":  []any{int64(1), 2.0, int64(3)},
		},
	}
}

// The adapter's maps and lists must behave as CEL's own: every expression
// gives the same answer, or the same error, with either.
func TestAdapterAgreesWithCEL(t *testing.T) {
	exprs := []string{
		"object.spec == oldObject.spec",
		"object.spec != oldObject.spec",
		"object.metadata == oldObject.metadata",
		"object.spec.containers == oldObject.spec.containers",
		"object.spec.containers[0] == oldObject.spec.containers[1]",
		"object.spec.nums == [1, 2, 3]",
		"object.spec.nums == [1.0, 2.0, 3.0]",
		"object.spec.nums == [1, 2]",
		"object.metadata.labels == {'app': 'web', 'tier': 'frontend'}",
		"object.metadata.labels == {'app': 'web', 'tier': 'backend'}",
		"object.metadata.labels == {'app': 'web'}",
		"{'app': 'web', 'tier': 'frontend'} == object.metadata.labels",
		"object.spec.replicas == 3.0",
		"object.spec.ratio == 0.5",
		"object.spec.nothing == null",
		"object.spec.paused == false",
		"object.spec == object.metadata",
		"object.spec.names == object.spec.nums",
		"object.spec.containers == object.spec",
		"size(object.spec) == 7 && size(object.spec.names) == 3",
		"'app' in object.metadata.labels && !('x' in object.metadata.labels)",
		"'a' in object.spec.names && 2 in object.spec.nums",
		"has(object.metadata.labels.app) && !has(object.metadata.labels.x)",
		"object.metadata.labels['missing'] == 'x'",
		"object.spec.names[5] == 'x'",
		"object.spec.names[-1] == 'x'",
		"object.spec.names['x'] == 'x'",
		"object.metadata.labels[1] == 'x'",
		"object.spec.containers.exists(c, c.name == 'sidecar')",
		"object.spec.containers.all(c, c.ports.all(p, p.containerPort > 1000))",
		"object.spec.containers.map(c, c.name) == ['web', 'sidecar']",
		"object.spec.containers.filter(c, size(c.ports) > 0).size() == 1",
		"object.metadata.labels.exists(k, k == 'tier')",
		"object.metadata.labels.all(k, v, v != '')",
		"object.spec.names.exists(i, v, i == 2 && v == 'c')",
		"object.metadata.labels.transformList(k, v, k + '=' + v).size() == 2",
		"object.spec.names + ['d'] == ['b', 'a', 'c', 'd']",
		"object.spec.names.sort() == ['a', 'b', 'c']",
		"object.spec.names.isSorted()",
		"object.spec.nums.indexOf(3) == 2",
		"object.spec.names.join(',') == 'b,a,c'",
		"sets.contains(object.spec.names, ['a'])",
		"object.?metadata.?labels.?app.orValue('none') == 'web'",
		"object.?spec.?missing.orValue('none') == 'none'",
		"type(object.spec) == map && type(object.spec.names) == list",
		"dyn(object.spec.replicas) == 3",
		"object.metadata.name.matches('^web-[0-9]+$')",
		"string(object.spec.replicas) == '3'",
		"object.spec.containers[0].ports[0].containerPort == 8080",
	}
	obj, old := celObject(), celObject()
	old["spec"].(map[string]any)["containers"].([]any)[1] = map[string]any{"name": "web", "ports": []any{map[string]any{"containerPort": int64(8080)}}}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			o := options{costLimit: DefaultCostLimit}
			ours, err := compileWith(adapter{}, "when", expr, o, varObject, varOldObject)
			if err != nil {
				t.Fatal(err)
			}
			cels, err := compileWith(nil, "when", expr, o, varObject, varOldObject)
			if err != nil {
				t.Fatal(err)
			}
			for _, pair := range [][2]map[string]any{{obj, old}, {obj, obj}, {old, obj}} {
				got, gotErr := ours.eval(pair[0], pair[1])
				want, wantErr := cels.eval(pair[0], pair[1])
				if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("adapter: %v, %v; CEL's own: %v, %v", got, gotErr, want, wantErr)
				}
			}
		})
	}
}

// equal must agree with CEL's == on the values of unstructured content,
// and on others.
func TestEqualAgreesWithCEL(t *testing.T) {
	values := []any{
		nil, true, false, "", "a", int64(0), int64(1), int64(-1), 0.0, 1.0, 1.5, math.NaN(), math.Inf(1),
		int64(math.MaxInt64), float64(math.MaxInt64), int64(1 << 53), float64(1 << 53),
		1, int32(1), uint64(1), // not unstructured: compared by CEL
		[]any{}, []any{int64(1)}, []any{1.0}, []any{int64(1), "a"}, []any{nil},
		map[string]any{}, map[string]any{"a": int64(1)}, map[string]any{"a": 1.0}, map[string]any{"b": int64(1)},
		map[string]any{"a": []any{map[string]any{"x": nil}}}, map[string]any{"a": []any{map[string]any{"x": false}}},
		map[string]string{"a": "b"}, map[string]any{"a": "b"},
	}
	for _, a := range values {
		for _, b := range values {
			want := types.Equal(types.DefaultTypeAdapter.NativeToValue(a), types.DefaultTypeAdapter.NativeToValue(b)) == types.True
			if got := equal(a, b); got != want {
				t.Errorf("equal(%#v, %#v) = %v, CEL says %v", a, b, got, want)
			}
		}
	}
}

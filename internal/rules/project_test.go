package rules_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/kubebridge/kubebridge/internal/rules"
)

func TestProject(t *testing.T) {
	r := compile(t, rules.Spec{OldObject: true, IgnoreFields: [][]string{
		{"status"},
		{"metadata", "annotations", "example.com/heartbeat"},
		{"metadata", "labels", "missing"}, // no such label
		{"spec", "nodeName", "deeper"},    // through a string
		{"nothing", "here"},               // no such map
		{"metadata", "generateName"},      // absent
	}})
	obj := map[string]any{
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]any{"example.com/heartbeat": "12:00", "keep": "yes"},
			"labels":      map[string]any{"app": "web"},
		},
		"spec":   map[string]any{"nodeName": "n1"},
		"status": map[string]any{"phase": "Running"},
	}
	r.Project(obj)
	want := map[string]any{
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]any{"keep": "yes"},
			"labels":      map[string]any{"app": "web"},
		},
		"spec": map[string]any{"nodeName": "n1"},
	}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("Project gave %v, want %v", obj, want)
	}

	// Projecting again changes nothing.
	r.Project(obj)
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("second Project gave %v, want %v", obj, want)
	}

	var none *rules.Rules
	before := maps.Clone(obj)
	none.Project(obj)
	if !reflect.DeepEqual(obj, before) {
		t.Errorf("nil Rules' Project changed the object")
	}
	compile(t, rules.Spec{OldObject: true}).Project(obj)
	if !reflect.DeepEqual(obj, before) {
		t.Errorf("Project without ignoreFields changed the object")
	}
}

func TestOnlyResourceVersionDiffers(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "resourceVersion": "7", "labels": map[string]any{"x": "y"}},
			"data":     map[string]any{"k": "v", "n": []any{int64(1), 2.5, true, nil}},
		}
	}
	tests := []struct {
		name   string
		change func(m map[string]any)
		want   bool
	}{
		{"equal", func(map[string]any) {}, true},
		{"resourceVersion", func(m map[string]any) { m["metadata"].(map[string]any)["resourceVersion"] = "8" }, true},
		{"resourceVersion missing", func(m map[string]any) { delete(m["metadata"].(map[string]any), "resourceVersion") }, true},
		{"int as double", func(m map[string]any) { m["data"].(map[string]any)["n"].([]any)[0] = 1.0 }, true},
		{"a label", func(m map[string]any) { m["metadata"].(map[string]any)["labels"].(map[string]any)["x"] = "z" }, false},
		{"a metadata field added", func(m map[string]any) { m["metadata"].(map[string]any)["generation"] = int64(2) }, false},
		{"a metadata field removed", func(m map[string]any) { delete(m["metadata"].(map[string]any), "labels") }, false},
		{"metadata removed", func(m map[string]any) { delete(m, "metadata") }, false},
		{"metadata not a map", func(m map[string]any) { m["metadata"] = "x" }, false},
		{"data value", func(m map[string]any) { m["data"].(map[string]any)["k"] = "w" }, false},
		{"list element", func(m map[string]any) { m["data"].(map[string]any)["n"].([]any)[3] = false }, false},
		{"list length", func(m map[string]any) { d := m["data"].(map[string]any); d["n"] = append(d["n"].([]any), "x") }, false},
		{"null against absent", func(m map[string]any) { m["data"].(map[string]any)["extra"] = nil }, false},
		{"top-level field added", func(m map[string]any) { m["status"] = map[string]any{} }, false},
		{"top-level field renamed", func(m map[string]any) { m["datb"] = m["data"]; delete(m, "data") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, old := base(), base()
			tt.change(obj)
			objCopy, oldCopy := deepCopy(obj), deepCopy(old)
			if got := rules.OnlyResourceVersionDiffers(obj, old); got != tt.want {
				t.Errorf("OnlyResourceVersionDiffers(changed, old) = %v, want %v", got, tt.want)
			}
			if got := rules.OnlyResourceVersionDiffers(old, obj); got != tt.want {
				t.Errorf("OnlyResourceVersionDiffers(old, changed) = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(obj, objCopy) || !reflect.DeepEqual(old, oldCopy) {
				t.Errorf("the objects were changed")
			}
		})
	}
}

func deepCopy(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, e := range v {
		out[k] = deepCopyValue(e)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopy(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return v
}

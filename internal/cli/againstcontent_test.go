package cli

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What a type that ignores fields is compared by (contract §11): the
// content, less the resourceVersion and what the bridge removes anyway.
func TestContentDiff(t *testing.T) {
	stream := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: "10", Labels: map[string]string{"app": "x"}},
		Data:       map[string]string{"v": "1"}}
	listed := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "a", "uid": "u1", "resourceVersion": "15", "labels": map[string]any{"app": "x"},
				"managedFields": []any{map[string]any{"manager": "kubectl"}},
				"annotations":   map[string]any{lastApplied: "{}"}},
			"data": map[string]any{"v": "1"},
			// A field the ConfigMap's Go type does not know: the state's
			// object went through that type and lost it too.
			"newField": "x"}
		if mod != nil {
			mod(m)
		}
		return m
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "resourceVersion": "3"}, "spec": map[string]any{"size": int64(3)}}}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "1"}}
	redacted := func() runtime.Object {
		// As the bridge publishes it: the keys kept, the values null.
		var s corev1.Secret
		if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","resourceVersion":"1"},"data":{"k":null}}`), &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	for _, tc := range []struct {
		name   string
		stream runtime.Object
		listed map[string]any
		want   string
	}{
		{"only what is not compared", stream, listed(nil), ""},
		{"data", stream, listed(func(m map[string]any) { m["data"].(map[string]any)["v"] = "2" }), "data.v"},
		{"a label added", stream, listed(func(m map[string]any) { m["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] = "a" }), "metadata.labels.tier"},
		{"another annotation", stream, listed(func(m map[string]any) { m["metadata"].(map[string]any)["annotations"].(map[string]any)["k"] = "v" }), "metadata.annotations"},
		{"unstructured, as it is", u, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "resourceVersion": "4"}, "spec": map[string]any{"size": int64(3), "color": "x"}}, "spec.color"},
		{"many", stream, listed(func(m map[string]any) {
			m["data"] = map[string]any{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "v": "1"}
		}), "data.a, data.b, data.c, data.d, …"},
		{"a redacted Secret", redacted(), map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "resourceVersion": "2"},
			"data": map[string]any{"k": "c2VjcmV0"}}, ""},
		{"a Secret's new key", redacted(), map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "resourceVersion": "2"},
			"data": map[string]any{"k": "c2VjcmV0", "k2": "eA=="}}, "data.k2"},
		{"an unredacted Secret", secret, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "resourceVersion": "2"},
			"data": map[string]any{"k": "c2VjcmV0"}}, "data"},
	} {
		got, err := contentDiff(tc.stream, tc.listed)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

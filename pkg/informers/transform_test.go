package informers_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

const otherAnnotation = "example.com/keep"

func trimMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: "ns",
		Name:      "obj",
		Annotations: map[string]string{
			informers.LastAppliedAnnotation: `{"apiVersion":"v1","data":{"password":"hunter2"}}`,
			otherAnnotation:                 "yes",
		},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}
}

func typedConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: trimMeta(),
		Data:       map[string]string{"k": "v"},
		BinaryData: map[string][]byte{"b": []byte("bytes")},
	}
}

func typedSecret() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: trimMeta(),
		Data:       map[string][]byte{"password": []byte("hunter2"), "user": []byte("admin")},
		StringData: map[string]string{"token": "s3cr3t"},
		Type:       corev1.SecretTypeOpaque,
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func transform(t *testing.T, o informers.TransformOptions, obj interface{}) interface{} {
	t.Helper()
	fn := o.Transform()
	if fn == nil {
		t.Fatalf("Transform() of %+v is nil", o)
	}
	out, err := fn(obj)
	if err != nil {
		t.Fatalf("transform: %v", err)
	}
	return out
}

func accessor(t *testing.T, obj interface{}) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTransformNilWhenNothingToDo(t *testing.T) {
	if fn := (informers.TransformOptions{}).Transform(); fn != nil {
		t.Error("Transform() with every option off is not nil")
	}
	for _, o := range []informers.TransformOptions{
		{StripManagedFields: true},
		{StripLastApplied: true},
		{RedactSecrets: true},
	} {
		if o.Transform() == nil {
			t.Errorf("Transform() of %+v is nil", o)
		}
	}
}

func TestTransformStripsManagedFields(t *testing.T) {
	for name, obj := range map[string]runtime.Object{
		"typed":        typedConfigMap(),
		"unstructured": toUnstructured(t, typedConfigMap()),
	} {
		t.Run(name, func(t *testing.T) {
			out := transform(t, informers.TransformOptions{StripManagedFields: true}, obj)
			m := accessor(t, out)
			if mf := m.GetManagedFields(); len(mf) != 0 {
				t.Errorf("managedFields kept: %+v", mf)
			}
			// Nothing else is trimmed.
			if a := m.GetAnnotations(); a[informers.LastAppliedAnnotation] == "" || a[otherAnnotation] != "yes" {
				t.Errorf("annotations changed: %v", a)
			}
			if u, ok := out.(*unstructured.Unstructured); ok {
				if _, found := u.Object["metadata"].(map[string]interface{})["managedFields"]; found {
					t.Error("unstructured metadata still has a managedFields key")
				}
			}
		})
	}
}

func TestTransformKeepsManagedFieldsWhenNotAsked(t *testing.T) {
	out := transform(t, informers.TransformOptions{StripLastApplied: true, RedactSecrets: true}, typedConfigMap())
	if mf := accessor(t, out).GetManagedFields(); len(mf) != 1 {
		t.Errorf("managedFields = %+v, want the one entry kept", mf)
	}
}

func TestTransformLastApplied(t *testing.T) {
	cases := []struct {
		name     string
		opts     informers.TransformOptions
		obj      func(t *testing.T) runtime.Object
		stripped bool
	}{
		{"configmap/strip", informers.TransformOptions{StripLastApplied: true}, func(*testing.T) runtime.Object { return typedConfigMap() }, true},
		{"configmap/unstructured/strip", informers.TransformOptions{StripLastApplied: true}, func(t *testing.T) runtime.Object { return toUnstructured(t, typedConfigMap()) }, true},
		{"configmap/keep", informers.TransformOptions{StripManagedFields: true}, func(*testing.T) runtime.Object { return typedConfigMap() }, false},
		// RedactSecrets alone leaves other kinds' last-applied alone.
		{"configmap/redact-only/keep", informers.TransformOptions{RedactSecrets: true}, func(*testing.T) runtime.Object { return typedConfigMap() }, false},
		{"configmap/unstructured/redact-only/keep", informers.TransformOptions{RedactSecrets: true}, func(t *testing.T) runtime.Object { return toUnstructured(t, typedConfigMap()) }, false},
		// ...but on a Secret the annotation holds the values in clear text.
		{"secret/redact-only/strip", informers.TransformOptions{RedactSecrets: true}, func(*testing.T) runtime.Object { return typedSecret() }, true},
		{"secret/unstructured/redact-only/strip", informers.TransformOptions{RedactSecrets: true}, func(t *testing.T) runtime.Object { return toUnstructured(t, typedSecret()) }, true},
		{"secret/no-redact/keep", informers.TransformOptions{StripManagedFields: true}, func(*testing.T) runtime.Object { return typedSecret() }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := accessor(t, transform(t, tc.opts, tc.obj(t))).GetAnnotations()
			_, has := a[informers.LastAppliedAnnotation]
			if has == tc.stripped {
				t.Errorf("last-applied present = %v, want %v (annotations %v)", has, !tc.stripped, a)
			}
			if a[otherAnnotation] != "yes" {
				t.Errorf("other annotation lost: %v", a)
			}
		})
	}
}

func TestTransformRedactsTypedSecret(t *testing.T) {
	out := transform(t, informers.TransformOptions{RedactSecrets: true}, typedSecret())
	s, ok := out.(*corev1.Secret)
	if !ok {
		t.Fatalf("transform returned %T", out)
	}
	if len(s.Data) != 2 || len(s.StringData) != 1 {
		t.Fatalf("keys not kept: data %v, stringData %v", s.Data, s.StringData)
	}
	for k, v := range s.Data {
		if len(v) != 0 {
			t.Errorf("data[%q] = %q, want empty", k, v)
		}
	}
	if _, ok := s.Data["password"]; !ok {
		t.Errorf("data key password lost: %v", s.Data)
	}
	if v, ok := s.StringData["token"]; !ok || v != "" {
		t.Errorf("stringData[token] = %q (present %v), want empty and present", v, ok)
	}
	if s.Type != corev1.SecretTypeOpaque || len(s.ManagedFields) != 1 {
		t.Errorf("unrelated fields changed: type %q, managedFields %v", s.Type, s.ManagedFields)
	}
}

func TestTransformRedactsUnstructuredSecret(t *testing.T) {
	u := toUnstructured(t, typedSecret())
	out := transform(t, informers.TransformOptions{RedactSecrets: true}, u).(*unstructured.Unstructured)
	for _, field := range []struct {
		name string
		keys []string
	}{{"data", []string{"password", "user"}}, {"stringData", []string{"token"}}} {
		m, ok := out.Object[field.name].(map[string]interface{})
		if !ok {
			t.Fatalf("%s is %T, want a map", field.name, out.Object[field.name])
		}
		if len(m) != len(field.keys) {
			t.Errorf("%s has %d keys, want %d: %v", field.name, len(m), len(field.keys), m)
		}
		for _, k := range field.keys {
			v, ok := m[k]
			if !ok {
				t.Errorf("%s key %q lost", field.name, k)
			}
			if v != nil && v != "" {
				t.Errorf("%s[%q] = %v, want no value", field.name, k, v)
			}
		}
	}
	if out.Object["type"] != string(corev1.SecretTypeOpaque) {
		t.Errorf("type changed: %v", out.Object["type"])
	}
}

func TestTransformLeavesNonSecretDataAlone(t *testing.T) {
	opts := informers.TransformOptions{StripManagedFields: true, StripLastApplied: true, RedactSecrets: true}

	cm := transform(t, opts, typedConfigMap()).(*corev1.ConfigMap)
	if !reflect.DeepEqual(cm.Data, map[string]string{"k": "v"}) || string(cm.BinaryData["b"]) != "bytes" {
		t.Errorf("configmap data changed: %v %v", cm.Data, cm.BinaryData)
	}

	ucm := transform(t, opts, toUnstructured(t, typedConfigMap())).(*unstructured.Unstructured)
	if v, _, _ := unstructured.NestedString(ucm.Object, "data", "k"); v != "v" {
		t.Errorf("unstructured configmap data changed: %v", ucm.Object["data"])
	}

	// A custom resource that happens to be called Secret is not a core
	// Secret: its data stays, and so does its last-applied when only
	// secrets are redacted.
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1",
		"kind":       "Secret",
		"metadata": map[string]interface{}{
			"name":        "x",
			"annotations": map[string]interface{}{informers.LastAppliedAnnotation: "{}"},
		},
		"data": map[string]interface{}{"k": "v"},
	}}
	out := transform(t, informers.TransformOptions{RedactSecrets: true}, cr).(*unstructured.Unstructured)
	if v, _, _ := unstructured.NestedString(out.Object, "data", "k"); v != "v" {
		t.Errorf("example.com/v1 Secret data changed: %v", out.Object["data"])
	}
	if _, ok := out.GetAnnotations()[informers.LastAppliedAnnotation]; !ok {
		t.Errorf("example.com/v1 Secret lost its last-applied annotation")
	}
}

func TestTransformPassesTombstoneThrough(t *testing.T) {
	secret := typedSecret()
	want := secret.DeepCopy()
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/obj", Obj: secret}
	out := transform(t, informers.TransformOptions{StripManagedFields: true, StripLastApplied: true, RedactSecrets: true}, tomb)
	got, ok := out.(cache.DeletedFinalStateUnknown)
	if !ok {
		t.Fatalf("transform returned %T, want the tombstone", out)
	}
	if got.Key != tomb.Key || got.Obj != secret {
		t.Errorf("tombstone changed: %+v", got)
	}
	// The object inside is the cache's own: it must not be trimmed again.
	if !reflect.DeepEqual(secret, want) {
		t.Errorf("object inside the tombstone was modified:\n got %+v\nwant %+v", secret, want)
	}
}

func TestTransformIgnoresNonObjects(t *testing.T) {
	out := transform(t, informers.TransformOptions{StripManagedFields: true, RedactSecrets: true}, "not an object")
	if out != "not an object" {
		t.Errorf("transform returned %v", out)
	}
}

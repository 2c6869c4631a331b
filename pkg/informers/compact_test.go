package informers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// fullWidget is a Widget as the API server sends it to a dynamic
// informer: managed fields, the last-applied annotation, labels, owner
// references, a deletion timestamp, and data encoding/json escapes.
func fullWidget() *unstructured.Unstructured {
	u := widget("ns", "w1", "42")
	u.SetUID("0d0d0d0d-1111-4222-8333-444444444444")
	u.SetGeneration(7)
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)))
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC))
	u.SetDeletionTimestamp(&deleted)
	u.SetLabels(map[string]string{"app": "w"})
	u.SetAnnotations(map[string]string{LastAppliedAnnotation: `{"data":{}}`, "note": "a <b> & c"})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0e0e"}})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	u.Object["data"] = map[string]any{"key-0": "x < y", "n": int64(3)}
	return u
}

// The dynamic informer's transform trims as before, then caches the
// compact form: the JSON the trimmed Unstructured marshals to, byte for
// byte, and its metadata.
func TestCompactingTransformTrimsThenCompacts(t *testing.T) {
	trim := TransformOptions{StripManagedFields: true, StripLastApplied: true}.Transform()
	out, err := compacting(trim, widgets, nil)(fullWidget())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*Compact)
	if !ok {
		t.Fatalf("transform returned %T, want *Compact", out)
	}
	want := fullWidget()
	want.SetManagedFields(nil)
	want.SetAnnotations(map[string]string{"note": "a <b> & c"})
	wantJSON, err := want.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if c.RawJSON()+"\n" != string(wantJSON) {
		t.Errorf("JSON\n%s\nwant\n%s", c.RawJSON(), wantJSON)
	}
	if strings.Contains(c.RawJSON(), "managedFields") || strings.Contains(c.RawJSON(), LastAppliedAnnotation) {
		t.Errorf("JSON not trimmed: %s", c.RawJSON())
	}
	if c.GroupVersionKind() != want.GroupVersionKind() || c.Name != "w1" || c.Namespace != "ns" || c.UID != want.GetUID() ||
		c.ResourceVersion != "42" || c.Generation != 7 || !c.CreationTimestamp.Equal(ptr(want.GetCreationTimestamp())) ||
		!c.DeletionTimestamp.Equal(want.GetDeletionTimestamp()) || !reflect.DeepEqual(c.Labels, want.GetLabels()) ||
		!reflect.DeepEqual(c.OwnerReferences, want.GetOwnerReferences()) {
		t.Errorf("metadata %+v %+v, want those of %v", c.TypeMeta, c.ObjectMeta, want.Object["metadata"])
	}
	back, err := c.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Object, want.Object) {
		t.Errorf("decoded\n%v\nwant\n%v", back.Object, want.Object)
	}
}

func ptr[T any](v T) *T { return &v }

// A Secret read through the dynamic informer is redacted before it is
// compacted: its values never reach the cached JSON.
func TestCompactingTransformRedactsBeforeCompacting(t *testing.T) {
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "ns"},
		"data":     map[string]any{"password": "aHVudGVyMg=="},
	}}
	out, err := compacting(TransformOptions{RedactSecrets: true}.Transform(), widgets, nil)(s)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*Compact)
	if !ok {
		t.Fatalf("transform returned %T, want *Compact", out)
	}
	if got := c.RawJSON(); strings.Contains(got, "aHVudGVyMg==") || !strings.Contains(got, `"password":null`) {
		t.Errorf("cached JSON %s, want the value redacted", got)
	}
}

// Without a transform the objects are still compacted; tombstones and
// compact objects pass unchanged.
func TestCompactingTransformPassesTheRest(t *testing.T) {
	out, err := compacting(nil, widgets, nil)(fullWidget())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := out.(*Compact); !ok || !strings.Contains(c.RawJSON(), "managedFields") {
		t.Errorf("no transform: got %T %v, want a Compact of the whole object", out, out)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/w1", Obj: &Compact{}}
	if out, err := compacting(nil, widgets, nil)(tomb); err != nil || !reflect.DeepEqual(out, tomb) {
		t.Errorf("tombstone became %v (%v)", out, err)
	}
	c := &Compact{}
	if out, err := compacting(nil, widgets, nil)(c); err != nil || out != c {
		t.Errorf("a Compact became %T (%v)", out, err)
	}
}

// A typed object's compact form holds the JSON encoding/json writes for
// it, with its apiVersion and kind first, as trimmed and redacted by the
// transform, and the metadata the bridge reads.
func TestCompactingTypedObjects(t *testing.T) {
	created := metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	meta := metav1.ObjectMeta{
		Name: "s", Namespace: "ns", UID: "u-1", ResourceVersion: "42", Generation: 3, CreationTimestamp: created,
		Labels:          map[string]string{"app": "shop"},
		Annotations:     map[string]string{LastAppliedAnnotation: `{"data":{"password":"hunter2"}}`, "note": "<&>"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-0"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Finalizers:      []string{"example.com/keep"},
	}
	secret := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("hunter2")}}
	secrets := &Resource{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Namespaced: true}
	trims := TransformOptions{StripManagedFields: true, RedactSecrets: true}
	out, err := compacting(trims.Transform(), secrets, nil)(secret.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*Compact)
	if !ok {
		t.Fatalf("got a %T, want a Compact", out)
	}
	want := &corev1.Secret{ObjectMeta: *meta.DeepCopy(), Data: map[string][]byte{"password": nil}}
	want.ManagedFields = nil
	delete(want.Annotations, LastAppliedAnnotation)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(want); err != nil {
		t.Fatal(err)
	}
	// apiVersion and kind first, as the encoder has always written a
	// typed object.
	wantJSON := `{"apiVersion":"v1","kind":"Secret",` + strings.TrimSuffix(strings.TrimPrefix(buf.String(), "{"), "\n")
	if got := c.RawJSON(); got != wantJSON {
		t.Errorf("JSON\n%s\nwant\n%s", got, wantJSON)
	}
	if strings.Contains(c.RawJSON(), "hunter2") || strings.Contains(c.RawJSON(), "managedFields") {
		t.Errorf("not trimmed: %s", c.RawJSON())
	}
	if c.APIVersion != "v1" || c.Kind != "Secret" || c.Name != "s" || c.Namespace != "ns" || c.UID != "u-1" || c.ResourceVersion != "42" ||
		c.Generation != 3 || !c.CreationTimestamp.Equal(&created) || !reflect.DeepEqual(c.Labels, meta.Labels) ||
		!reflect.DeepEqual(c.OwnerReferences, meta.OwnerReferences) {
		t.Errorf("metadata %+v", c.ObjectMeta)
	}
	// The typed object's own TypeMeta, when set, is what is written.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cm"}}
	c, err = NewTypedCompact(cm, "v1", "ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"}}`; c.RawJSON() != want {
		t.Errorf("JSON %s, want %s", c.RawJSON(), want)
	}
}

// A copy's metadata is its own; the JSON, never changed, is shared.
func TestCompactDeepCopyObject(t *testing.T) {
	c, err := NewCompact(fullWidget())
	if err != nil {
		t.Fatal(err)
	}
	cp, ok := c.DeepCopyObject().(*Compact)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", c.DeepCopyObject())
	}
	if !reflect.DeepEqual(cp, c) {
		t.Fatalf("copy %+v, want %+v", cp, c)
	}
	cp.Labels["app"] = "changed"
	cp.OwnerReferences[0].Name = "changed"
	if c.Labels["app"] != "w" || c.OwnerReferences[0].Name != "owner" {
		t.Errorf("changing the copy changed the original: %v %v", c.Labels, c.OwnerReferences)
	}
}

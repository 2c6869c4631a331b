package encode_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// podEdits change a Pod the ways a cluster does: status, labels,
// annotations, a container's image and env (inside arrays), and fields
// added and removed.
var podEdits = []func(p *corev1.Pod){
	func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning },
	func(p *corev1.Pod) { p.Labels["tier"] = "frontend" },
	func(p *corev1.Pod) { delete(p.Labels, "pod-template-hash") },
	func(p *corev1.Pod) { p.Annotations["example.com/heartbeat"] = "2026-01-02T03:04:05Z" },
	func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example.com/shop/checkout:v1.43.0" },
	func(p *corev1.Pod) { p.Spec.Containers[0].Env = p.Spec.Containers[0].Env[2:] },
	func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "NEW", Value: "<&>"})
	},
	func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
	},
	func(p *corev1.Pod) { p.Spec.NodeName = "" },
}

// An update's patch turns its published old object into its published
// object, for every kind of edit and every pair of them; with the old
// object omitted, the data holds only the object and the patch.
func TestUpdatePatchApplies(t *testing.T) {
	for _, omitOld := range []bool{false, true} {
		e := &encode.Encoder{Subjects: contract.Subjects{Prefix: "kubebridge", Cluster: "test"},
			Updates: map[*informers.Resource]encode.UpdateData{pods: {Patch: true, OmitOldObject: omitOld}}}
		for i, first := range podEdits {
			for j, second := range podEdits {
				old := fixtures.Pod(1, 10)
				obj := old.DeepCopy()
				obj.ResourceVersion = "11"
				first(obj)
				second(obj)
				name := fmt.Sprintf("omitOld=%v/edits %d+%d", omitOld, i, j)
				data := encodeUpdate(t, e, obj, old)
				if _, ok := data["oldObject"]; ok == omitOld {
					t.Errorf("%s: oldObject present %v; want %v", name, ok, !omitOld)
				}
				oldJSON := encodeUpdate(t, &encode.Encoder{Subjects: e.Subjects}, old, old)["object"]
				p, err := jsonpatch.DecodePatch(data["patch"])
				if err != nil {
					t.Fatalf("%s: patch %s: %v", name, data["patch"], err)
				}
				got, err := p.Apply(oldJSON)
				if err != nil {
					t.Fatalf("%s: applying %s: %v", name, data["patch"], err)
				}
				if !sameJSON(t, got, data["object"]) {
					t.Errorf("%s: the patch %s applied to the old object gives\n%s\nwant\n%s", name, data["patch"], got, data["object"])
				}
			}
		}
	}
}

// Without rules an update carries no patch; adds never do.
func TestNoPatchWithoutTheRule(t *testing.T) {
	e := &encode.Encoder{Subjects: contract.Subjects{Prefix: "kubebridge", Cluster: "test"},
		Updates: map[*informers.Resource]encode.UpdateData{configMaps: {Patch: true}}}
	old := fixtures.Pod(1, 10)
	obj := old.DeepCopy()
	obj.ResourceVersion = "11"
	if data := encodeUpdate(t, e, obj, old); data["patch"] != nil || data["oldObject"] == nil {
		t.Errorf("a pod update, with rules for configmaps only: patch %s, oldObject present %v; want no patch, the old object", data["patch"], data["oldObject"] != nil)
	}
	e.Updates[pods] = encode.UpdateData{Patch: true}
	enc, err := e.EncodeWithin(informers.Change{Verb: informers.Added, Resource: pods, Object: obj, ObservedAt: observedAt}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(enc.Msg.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["patch"] != nil {
		t.Errorf("an add carries a patch: %s", data["patch"])
	}
}

// sameJSON reports whether a and b are the same JSON value (jsonpatch's
// Equal compares strings as written, escapes included).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func encodeUpdate(t *testing.T, e *encode.Encoder, obj, old *corev1.Pod) map[string]json.RawMessage {
	t.Helper()
	enc, err := e.EncodeWithin(informers.Change{Verb: informers.Updated, Resource: pods, Object: obj, OldObject: old, ObservedAt: observedAt}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(enc.Msg.Data, &data); err != nil {
		t.Fatalf("data %s: %v", enc.Msg.Data, err)
	}
	return data
}

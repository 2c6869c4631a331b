package encode_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// TestIDsDifferAcrossAliasedResources: one object served under two
// resources (HPA autoscaling/v1 and v2) must get different ids and
// Nats-Msg-Ids for the same change, or JetStream drops one type's events as
// duplicates of the other's.
func TestIDsDifferAcrossAliasedResources(t *testing.T) {
	hpa := func(version string) *informers.Resource {
		return &informers.Resource{GVR: schema.GroupVersionResource{Group: "autoscaling", Version: version, Resource: "horizontalpodautoscalers"},
			Kind: "HorizontalPodAutoscaler", Namespaced: true}
	}
	obj := &unstructured.Unstructured{}
	obj.SetNamespace("web")
	obj.SetName("api")
	obj.SetUID("11111111-2222-4333-8444-555555555555")
	obj.SetResourceVersion("42")
	obj.SetCreationTimestamp(metav1.Time{Time: time.Unix(0, 0)})
	enc := &encode.Encoder{Subjects: contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}}
	for _, verb := range []informers.Verb{informers.Added, informers.Updated, informers.Deleted, informers.SnapshotItem} {
		seen := map[string]string{}
		for _, v := range []string{"v1", "v2"} {
			c := informers.Change{Verb: verb, Resource: hpa(v), Object: obj, SnapshotID: "s1"}
			if verb == informers.Updated {
				c.OldObject = obj
			}
			e, err := enc.EncodeWithin(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			msgID := e.Msg.Header.Get(contract.HeaderMsgID)
			if other, dup := seen[msgID]; dup {
				t.Errorf("%s: %s and %s share Nats-Msg-Id %q", verb, other, v, msgID)
			}
			seen[msgID] = v
			if want := "horizontalpodautoscalers." + v + ".autoscaling/"; len(e.ID) < len(want) || e.ID[:len(want)] != want {
				t.Errorf("%s %s: id %q does not start with %q", verb, v, e.ID, want)
			}
		}
	}
}

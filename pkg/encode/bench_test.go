package encode_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var podsResource = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// BenchmarkMarshalPod is the baseline: encoding/json on one Pod.
func BenchmarkMarshalPod(b *testing.B) {
	pod := fixtures.Pod(0, 1)
	raw, _ := json.Marshal(pod)
	b.ReportMetric(float64(len(raw)), "bytes/pod")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(pod); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeUpdatedPod encodes an updated event carrying the new and
// the old Pod into a NATS message with CloudEvents headers.
func BenchmarkEncodeUpdatedPod(b *testing.B) {
	enc := encode.Encoder{Subjects: contract.Subjects{Prefix: "kubebridge", Cluster: "prod"}}
	c := informers.Change{Verb: informers.Updated, Resource: podsResource, Object: fixtures.Pod(0, 101), OldObject: fixtures.Pod(0, 100), ObservedAt: time.Now()}
	out, err := enc.EncodeWithin(c, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(out.Msg.Data)), "data-bytes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.EncodeWithin(c, 0); err != nil {
			b.Fatal(err)
		}
	}
}

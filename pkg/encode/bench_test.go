package encode_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// benchPod is a Pod of about 3 KB in JSON, shaped like a typical
// Deployment-managed Pod after managedFields are stripped.
func benchPod(rv int) *corev1.Pod {
	labels := map[string]string{"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "checkout-prod", "pod-template-hash": "5d8f7c9b6d", "tier": "backend"}
	env := make([]corev1.EnvVar, 12)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("CHECKOUT_SETTING_%02d", i), Value: fmt.Sprintf("value-%02d-for-the-checkout-service", i)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "checkout-5d8f7c9b6d-x7k2p", Namespace: "shop", UID: types.UID("4f9d2c1e-8b7a-4c3d-9e2f-1a2b3c4d5e6f"),
			ResourceVersion: fmt.Sprint(rv), Labels: labels, CreationTimestamp: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Annotations:     map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "checkout-5d8f7c9b6d", UID: "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "ip-10-0-12-34.eu-west-1.compute.internal", ServiceAccountName: "checkout",
			Containers: []corev1.Container{{
				Name: "checkout", Image: "registry.example.com/shop/checkout:v1.42.3", Env: env,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9090, Protocol: "TCP"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.45.67", HostIP: "10.0.12.34", QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "checkout", Ready: true, Image: "registry.example.com/shop/checkout:v1.42.3",
				ImageID: "registry.example.com/shop/checkout@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ContainerID: "containerd://fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"}},
		},
	}
}

var podsResource = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// BenchmarkMarshalPod is the baseline: encoding/json on one Pod.
func BenchmarkMarshalPod(b *testing.B) {
	pod := benchPod(1)
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
	enc := encode.Encoder{Subjects: encode.Subjects{Prefix: "kubebridge", Cluster: "prod"}, MaxPayload: 1 << 20}
	c := informers.Change{Verb: informers.Updated, Resource: podsResource, Object: benchPod(101), OldObject: benchPod(100), ObservedAt: time.Now()}
	out, err := enc.Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(out.Msg.Data)), "data-bytes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.Encode(c); err != nil {
			b.Fatal(err)
		}
	}
}

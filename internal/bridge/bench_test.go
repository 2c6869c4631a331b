package bridge

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var benchPods = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true}

// BenchmarkPipelineUpdatedPods measures updated Pod events per second from
// the handler's queue to JetStream acknowledgement, through an in-process
// nats-server with a file-backed stream: order guard, parallel encoding of
// new and old objects, async publishing with the default window.
func BenchmarkPipelineUpdatedPods(b *testing.B) {
	for _, storage := range []string{"file", "memory"} {
		b.Run(storage, func(b *testing.B) { benchPipeline(b, storage) })
	}
}

func benchPipeline(b *testing.B, storage string) {
	n := startNATS(b)
	nc, js := connect(b, n.url())
	cfg := testConfig(b, map[string]string{"BRIDGE_STREAM_STORAGE": storage, "BRIDGE_QUEUE_SIZE": "20000"})
	subjects := encode.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	ctx := context.Background()
	if _, err := ensureStream(ctx, js, cfg, subjects); err != nil {
		b.Fatal(err)
	}
	// 2000 distinct Pods, each updated repeatedly: consecutive events are
	// for different subjects, as with many Pods changing at once.
	const pods = 2000
	olds := make([]*corev1.Pod, pods)
	for i := range olds {
		olds[i] = benchPod(i, 1)
	}
	sh := newShared(cfg.QueueSize, metrics.New())
	q, cnt := sh.queue, &sh.counters
	soft, stop := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	defer cancelHard()
	var wg sync.WaitGroup
	enc := &encode.Encoder{Subjects: subjects, MaxPayload: int(nc.MaxPayload())}
	if _, _, err := startPublishing(soft, hard, &wg, cfg, js, enc, sh); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rv := 10
	for i := 0; i < b.N; i++ {
		k := i % pods
		rv++
		next := benchPod(k, rv)
		if err := q.Put(ctx, informers.Change{Verb: informers.Updated, Resource: benchPods, Object: next, OldObject: olds[k], ObservedAt: start}); err != nil {
			b.Fatal(err)
		}
		olds[k] = next
	}
	for cnt.acked.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	stop()
	wg.Wait()
	if cnt.superseded.Load() != 0 || cnt.encodeErrs.Load() != 0 {
		b.Fatalf("superseded %d, encode errors %d", cnt.superseded.Load(), cnt.encodeErrs.Load())
	}
}
func benchPod(i, rv int) *corev1.Pod {
	labels := map[string]string{"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "checkout-prod", "pod-template-hash": "5d8f7c9b6d", "tier": "backend"}
	env := make([]corev1.EnvVar, 12)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("CHECKOUT_SETTING_%02d", i), Value: fmt.Sprintf("value-%02d-for-the-checkout-service", i)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("checkout-5d8f7c9b6d-%05d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("4f9d2c1e-8b7a-4c3d-9e2f-%012d", i)),
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

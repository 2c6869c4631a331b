package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
)

// heartbeatAnnotation is the annotation the cluster mix renews on Pods and
// ConfigMaps, as agents and controllers renew theirs.
const heartbeatAnnotation = "example.com/heartbeat"

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// createPods creates n Pods, Pod i in object i's namespace, each with the
// status a kubelet writes once its container runs. There is no kubelet
// (nor controller-manager): the namespaces' default ServiceAccount, which
// admission requires, is created here, and the status is written with
// UpdateStatus.
func createPods(ctx context.Context, cs kubernetes.Interface, l layout, n, workers int) error {
	if n == 0 {
		return nil
	}
	for _, ns := range l.all() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service account of %s: %w", ns, err)
		}
	}
	start := time.Now()
	err := benchkit.Parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		return createPod(ctx, cs, l.namespace(i), i)
	}, func(d int) {
		if d%1000 == 0 || d == n {
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, "created %d/%d Pods in %v (%.0f/s)\n", d, n, el.Round(time.Millisecond), float64(d)/el.Seconds())
		}
	})
	if err != nil {
		return fmt.Errorf("create Pods: %w", err)
	}
	return nil
}

// createPod creates Pod i, bound to a node, and writes its running status.
func createPod(ctx context.Context, cs kubernetes.Interface, namespace string, i int) error {
	pods := cs.CoreV1().Pods(namespace)
	var created *corev1.Pod
	err := benchkit.Retry(ctx, func() error {
		var err error
		created, err = pods.Create(ctx, podOf(namespace, i), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = pods.Get(ctx, podName(i), metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return err
	}
	now := time.Now()
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: hostIP(i), HostIPs: []corev1.HostIP{{IP: hostIP(i)}},
		PodIP: podIP(i), PodIPs: []corev1.PodIP{{IP: podIP(i)}}, StartTime: &metav1.Time{Time: now},
		Conditions: []corev1.PodCondition{
			condition(corev1.PodReadyToStartContainers, true, now), condition(corev1.PodInitialized, true, now),
			condition(corev1.PodReady, true, now), condition(corev1.ContainersReady, true, now), condition(corev1.PodScheduled, true, now),
		},
		ContainerStatuses: []corev1.ContainerStatus{containerStatus(i, 0, true, now)},
	}
	return benchkit.Retry(ctx, func() error {
		_, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

// podOf is Pod i as a Deployment's template would make it: one container
// with ports, environment, resources, probes and a ConfigMap volume, bound
// to one of 20 nodes that do not exist.
func podOf(namespace string, i int) *corev1.Pod {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: namespace,
			Labels:      map[string]string{"app": "bench-versus", "tier": "web", "version": "0"},
			Annotations: map[string]string{heartbeatAnnotation: "created"}},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("bench-node-%02d", i%20),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/app:1.0", Args: []string{"--listen=:8080", "--log-format=json"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "LOG_LEVEL", Value: "info"}, {Name: "CACHE_SIZE", Value: "256"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ReadinessProbe: probe("/readyz"), LivenessProbe: probe("/livez"),
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: objectName(i)}}}}},
		},
	}
}

// statusPatch is the strategic merge patch of the status subresource a
// kubelet sends when a probe changes the Pod's readiness and its container
// restarted: the conditions that changed (merged by type) and the
// container statuses (a list replaced whole). restarts grows with every
// patch of the Pod, so no patch is a no-op.
func statusPatch(i int, restarts int32, ready bool, now time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{
		"conditions":        []corev1.PodCondition{condition(corev1.PodReady, ready, now), condition(corev1.ContainersReady, ready, now)},
		"containerStatuses": []corev1.ContainerStatus{containerStatus(i, restarts, ready, now)},
	}})
}

func condition(t corev1.PodConditionType, ok bool, now time.Time) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastProbeTime: metav1.Time{Time: now}, LastTransitionTime: metav1.Time{Time: now}}
	if !ok {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [app]"
	}
	return c
}

// containerStatus is the status of Pod i's container after its restarts:
// running since now, its last run ended by an error.
func containerStatus(i int, restarts int32, ready bool, now time.Time) corev1.ContainerStatus {
	id := fmt.Sprintf("containerd://%016x%016x", i, restarts)
	last := corev1.ContainerState{}
	if restarts > 0 {
		last.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: fmt.Sprintf("containerd://%016x%016x", i, restarts-1),
			StartedAt: metav1.Time{Time: now.Add(-time.Minute)}, FinishedAt: metav1.Time{Time: now.Add(-time.Second)}}
	}
	started := true
	return corev1.ContainerStatus{
		Name: "app", Ready: ready, Started: &started, RestartCount: restarts, ContainerID: id,
		Image:   "registry.example.com/app:1.0",
		ImageID: "registry.example.com/app@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
		State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: now}}}, LastTerminationState: last,
	}
}

func hostIP(i int) string { return fmt.Sprintf("10.0.0.%d", 10+i%20) }
func podIP(i int) string  { return fmt.Sprintf("10.244.%d.%d", i/250%250, 2+i%250) }

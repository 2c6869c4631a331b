package cli_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fixtures creates ConfigMaps, Secrets, Deployments (with status) and
// Pods (in many states) in ns1 and ns2.
func (h *harness) fixtures(ns1, ns2 string) {
	h.t.Helper()
	ctx := context.Background()
	core := h.cs.CoreV1()
	must := func(_ any, err error) {
		h.t.Helper()
		if err != nil {
			h.t.Fatal(err)
		}
	}
	cm := func(ns, name string, data map[string]string, bin map[string][]byte, labels map[string]string) {
		must(core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data, BinaryData: bin}, metav1.CreateOptions{}))
	}
	cm(ns1, "app-config", map[string]string{"a": "1", "b": "2", "c": "3"}, map[string][]byte{"blob": {0, 1}}, map[string]string{"app": "web"})
	cm(ns1, "empty", nil, nil, nil)
	cm(ns1, "zz-last", map[string]string{"x": "multi\nline"}, nil, map[string]string{"app": "api", "tier": "back"})
	cm(ns2, "other", map[string]string{"k": "v"}, nil, nil)

	secret := func(ns, name string, typ corev1.SecretType, data map[string][]byte) {
		must(core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, Data: data}, metav1.CreateOptions{}))
	}
	secret(ns1, "creds", corev1.SecretTypeOpaque, map[string][]byte{"user": []byte("u"), "password": []byte("p")})
	secret(ns1, "tls", corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca.crt": []byte("a")})
	secret(ns2, "nothing", corev1.SecretTypeOpaque, nil)

	deploy := func(ns, name string, replicas int32, images []string, status *appsv1.DeploymentStatus) {
		labels := map[string]string{"app": name}
		var containers []corev1.Container
		for i, img := range images {
			containers = append(containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: img})
		}
		d, err := h.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
		}, metav1.CreateOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		if status != nil {
			// No controller-manager runs: the status is what the test says.
			d.Status = *status
			must(h.cs.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}))
		}
	}
	deploy(ns1, "web", 3, []string{"nginx:1.27", "envoy:1.30"}, &appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1})
	deploy(ns1, "api", 1, []string{"api:v2"}, nil)
	deploy(ns2, "worker", 0, []string{"worker:latest"}, &appsv1.DeploymentStatus{})

	h.pods(ns1)
}

// pods creates pods whose statuses exercise the pod printer.
func (h *harness) pods(ns string) {
	h.t.Helper()
	ctx := context.Background()
	pods := h.cs.CoreV1().Pods(ns)
	now := metav1.NewTime(time.Now())
	longAgo := metav1.NewTime(time.Now().Add(-5 * 24 * time.Hour))
	create := func(name string, spec func(*corev1.PodSpec), status func(*corev1.PodStatus)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		if spec != nil {
			spec(&p.Spec)
		}
		p, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		if status != nil {
			status(&p.Status)
			if p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				h.t.Fatalf("pod %s status: %v", name, err)
			}
		}
		return p
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	create("pending", nil, nil)
	create("running", func(p *corev1.PodSpec) { p.NodeName = "node-a" }, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: true, State: running}}
	})
	create("crashing", func(p *corev1.PodSpec) {
		p.Containers = append(p.Containers, corev1.Container{Name: "side", Image: "busybox"})
	}, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "main", Image: "busybox", RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: longAgo, FinishedAt: longAgo}}},
			{Name: "side", Image: "busybox", Ready: true, State: running},
		}
	})
	create("completed", func(p *corev1.PodSpec) { p.RestartPolicy = corev1.RestartPolicyNever }, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodSucceeded
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}
	})
	create("initializing", func(p *corev1.PodSpec) {
		p.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}, {Name: "init2", Image: "busybox"}}
	}, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodPending
		s.InitContainerStatuses = []corev1.ContainerStatus{
			{Name: "init", Image: "busybox", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}},
			{Name: "init2", Image: "busybox", State: running},
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	})
	create("gated", func(p *corev1.PodSpec) {
		p.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	}, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.PodIP, s.PodIPs = "10.1.2.3", []corev1.PodIP{{IP: "10.1.2.3"}}
		s.NominatedNodeName = "node-b"
		s.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}, {Type: "example.com/dns", Status: corev1.ConditionFalse}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: false, State: running}}
	})
	// Once initialized, an init container's restarts no longer count; a
	// sidecar's (an init container that restarts always) do, and it
	// counts as a container.
	create("initialized", func(p *corev1.PodSpec) {
		p.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	}, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", Image: "busybox", RestartCount: 2,
			State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: longAgo, FinishedAt: longAgo}}}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: true, State: running}}
	})
	create("sidecar", func(p *corev1.PodSpec) {
		p.InitContainers = []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
	}, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", Image: "busybox", RestartCount: 1, Started: ptr.To(true), Ready: true, State: running,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: longAgo, FinishedAt: longAgo}}}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", Ready: true, State: running}}
	})
	// A finalizer keeps the deleted pod, with its deletionTimestamp.
	create("terminating", func(p *corev1.PodSpec) {}, nil)
	p, err := pods.Get(ctx, "terminating", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	p.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if err := pods.Delete(ctx, "terminating", metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		p, err := pods.Get(context.Background(), "terminating", metav1.GetOptions{})
		if err == nil {
			p.Finalizers = nil
			_, _ = pods.Update(context.Background(), p, metav1.UpdateOptions{})
		}
	})
}

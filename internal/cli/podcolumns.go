package cli

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podCells are kubectl's pod columns: READY counts ready containers
// (sidecars, i.e. init containers that restart always, included), STATUS
// is the most telling reason the pod and its containers give, RESTARTS
// says when the last restart was.
func podCells(obj runtime.Object, now time.Time, wide bool) []string {
	p := obj.(*corev1.Pod)
	s := podStatusOf(p)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, age(s.lastRestart, now))
	}
	row := []string{p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.reason, restarts, age(p.CreationTimestamp, now)}
	if wide {
		ip := "<none>"
		if len(p.Status.PodIPs) > 0 && p.Status.PodIPs[0].IP != "" {
			ip = p.Status.PodIPs[0].IP
		}
		row = append(row, ip, orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), readinessGates(p))
	}
	return row
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

type podStatus struct {
	ready, total, restarts int
	reason                 string
	lastRestart            metav1.Time
	// What the sidecars (restartable init containers) count for restarts.
	sidecarRestarts int
	sidecarLast     metav1.Time
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podStatusOf follows the apiserver's pod printer: the pod's phase or
// reason, overridden by the first init container that has not completed,
// else by the containers' own waiting or terminated reasons.
func podStatusOf(p *corev1.Pod) podStatus {
	s := podStatus{total: len(p.Spec.Containers), reason: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.reason = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.reason = corev1.PodReasonSchedulingGated
		}
	}
	inits := map[string]*corev1.Container{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		inits[c.Name] = c
		if isSidecar(c) {
			s.total++
		}
	}
	initializing := s.initContainers(p, inits)
	if !initializing || conditionTrue(p.Status.Conditions, corev1.PodInitialized) {
		// Once initialized, init containers' restarts are history; the
		// sidecars' still count.
		s.restarts, s.lastRestart = s.sidecarRestarts, s.sidecarLast
		s.containers(p)
	}
	if p.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == "NodeLost":
			s.reason = "Unknown"
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			s.reason = "Terminating"
		}
	}
	return s
}

// initContainers applies the init containers' statuses up to the first
// one not done; it reports whether the pod is still initializing.
func (s *podStatus) initContainers(p *corev1.Pod, inits map[string]*corev1.Container) bool {
	for i, cs := range p.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
		sidecar := isSidecar(inits[cs.Name])
		if sidecar {
			s.sidecarRestarts += int(cs.RestartCount)
			s.sidecarLast = later(s.sidecarLast, cs.LastTerminationState)
		}
		t, w := cs.State.Terminated, cs.State.Waiting
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case sidecar && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case t != nil:
			switch {
			case t.Reason != "":
				s.reason = "Init:" + t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			s.reason = "Init:" + w.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		return true
	}
	return false
}

// containers applies the app containers' statuses, last to first, so
// that the first container's reason wins.
func (s *podStatus) containers(p *corev1.Pod) {
	running := false
	errorReason := ""
	for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := p.Status.ContainerStatuses[i]
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
		t, w := cs.State.Terminated, cs.State.Waiting
		switch {
		case w != nil && w.Reason != "":
			s.reason = w.Reason
		case t != nil:
			switch {
			case t.Reason != "":
				s.reason = t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			}
			if t.ExitCode != 0 {
				errorReason = s.reason
			}
		case cs.Ready && cs.State.Running != nil:
			running = true
			s.ready++
		}
	}
	// A container that completed does not make a pod with running ones
	// "Completed".
	if s.reason == "Completed" {
		switch {
		case running && conditionTrue(p.Status.Conditions, corev1.PodReady):
			s.reason = "Running"
		case errorReason != "":
			s.reason = errorReason
		case running:
			s.reason = "NotReady"
		}
	}
}

func later(t metav1.Time, last corev1.ContainerState) metav1.Time {
	if last.Terminated != nil && t.Before(&last.Terminated.FinishedAt) {
		return last.Terminated.FinishedAt
	}
	return t
}

func conditionTrue(conds []corev1.PodCondition, typ corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readinessGates(p *corev1.Pod) string {
	if len(p.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	n := 0
	for _, g := range p.Spec.ReadinessGates {
		if conditionTrue(p.Status.Conditions, g.ConditionType) {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(p.Spec.ReadinessGates))
}

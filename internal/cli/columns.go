package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// column is one column of a kind's table; wide ones show with -o wide
// (the apiserver's priority 1).
type column struct {
	name string
	wide bool
}

// kindColumns are the columns of one kind and how to fill them, after
// the apiserver's own table printers (kubectl get prints what they
// return), for the common built-in kinds; other kinds get NAME and AGE,
// as the apiserver's default table does.
type kindColumns struct {
	columns []column
	cells   func(obj runtime.Object, now time.Time, wide bool) []string
}

func columnsFor(obj runtime.Object) kindColumns {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return kindColumns{columns: cols("Name", "Data", "Age"), cells: configMapCells}
	case *corev1.Secret:
		return kindColumns{columns: cols("Name", "Type", "Data", "Age"), cells: secretCells}
	case *corev1.Namespace:
		return kindColumns{columns: cols("Name", "Status", "Age"), cells: namespaceCells}
	case *appsv1.Deployment:
		return kindColumns{columns: append(cols("Name", "Ready", "Up-to-date", "Available", "Age"), wideCols("Containers", "Images", "Selector")...), cells: deploymentCells}
	case *corev1.Pod:
		return kindColumns{columns: append(cols("Name", "Ready", "Status", "Restarts", "Age"), wideCols("IP", "Node", "Nominated Node", "Readiness Gates")...), cells: podCells}
	}
	return kindColumns{columns: cols("Name", "Age"), cells: func(obj runtime.Object, now time.Time, _ bool) []string {
		m, err := meta.Accessor(obj)
		if err != nil {
			return []string{"<unknown>", "<unknown>"}
		}
		return []string{m.GetName(), age(m.GetCreationTimestamp(), now)}
	}}
}

func cols(names ...string) []column {
	out := make([]column, len(names))
	for i, n := range names {
		out[i] = column{name: n}
	}
	return out
}

func wideCols(names ...string) []column {
	out := cols(names...)
	for i := range out {
		out[i].wide = true
	}
	return out
}

func configMapCells(obj runtime.Object, now time.Time, _ bool) []string {
	cm := obj.(*corev1.ConfigMap)
	return []string{cm.Name, strconv.Itoa(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
}

// secretCells counts data keys: a redacted Secret (the bridge's default)
// keeps its keys, so DATA is the cluster's.
func secretCells(obj runtime.Object, now time.Time, _ bool) []string {
	s := obj.(*corev1.Secret)
	return []string{s.Name, string(s.Type), strconv.Itoa(len(s.Data)), age(s.CreationTimestamp, now)}
}

func namespaceCells(obj runtime.Object, now time.Time, _ bool) []string {
	ns := obj.(*corev1.Namespace)
	return []string{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
}

func deploymentCells(obj runtime.Object, now time.Time, wide bool) []string {
	d := obj.(*appsv1.Deployment)
	var desired int32
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	row := []string{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired),
		strconv.Itoa(int(d.Status.UpdatedReplicas)), strconv.Itoa(int(d.Status.AvailableReplicas)), age(d.CreationTimestamp, now)}
	if wide {
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		row = append(row, names, images, selector)
	}
	return row
}

// containerCells are the comma-separated names and images of containers.
func containerCells(cs []corev1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for k, c := range cs {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

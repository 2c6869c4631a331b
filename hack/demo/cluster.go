package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// setUp creates what exists before the bridge starts: the namespace, two
// ConfigMaps and the Widget CRD.
func (d *demo) setUp(ctx context.Context) error {
	d.say("--- creating namespace %s", namespace)
	if _, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.say("--- creating configmaps %[1]s/app-config and %[1]s/feature-flags (before the bridge starts: its start-up snapshot will report them)", namespace)
	for _, cm := range []*corev1.ConfigMap{
		configMap("app-config", map[string]string{"LOG_LEVEL": "info", "LISTEN": ":8080"}),
		configMap("feature-flags", map[string]string{"new-checkout": "false"}),
	} {
		if _, err := d.cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	d.say("--- creating CustomResourceDefinition %s (kind Widget) and waiting until it is served", crdName)
	if _, err := d.dyn.Resource(crdGVR).Create(ctx, fixtures.WidgetCRD(), metav1.CreateOptions{}); err != nil {
		return err
	}
	return d.waitCRD(ctx)
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "shop"}},
		Data:       data,
	}
}

func widget(name, color string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       map[string]any{"color": color, "size": size},
	}}
}

// waitCRD waits for the CRD's Established condition and for discovery to
// list the resource (the bridge resolves BRIDGE_RESOURCES through it).
func (d *demo) waitCRD(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if d.crdReady(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established and discoverable: %w", crdName, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *demo) crdReady(ctx context.Context) bool {
	crd, err := d.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	established := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false
	}
	list, err := d.cs.Discovery().ServerResourcesForGroupVersion(widgetGVR.GroupVersion().String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == widgetGVR.Resource })
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// objectKind is what a mode's objects are: ConfigMaps, or Widgets (the
// custom resource of internal/fixtures) shaped like them, -size bytes of
// data in benchkit.DataKeys string keys under .data. A mode row names its
// kind; the parent creates, updates and deletes objects of that kind for
// the mode's churn, so custom resources are measured on the same objects
// and the same changes as built-ins.
type objectKind struct {
	// plural names the objects in logs.
	plural string
	gvr    schema.GroupVersionResource
	kind   string
	// install makes the API server serve the kind (nil: it always does).
	install func(ctx context.Context, c clients) error
	create  func(ctx context.Context, c clients, namespace, name string, seed uint64, size int) error
	// setData sets one data key with a merge patch.
	setData func(ctx context.Context, c clients, namespace, name, key, value string) error
	remove  func(ctx context.Context, c clients, namespace, name string) error
}

// clients are the parent's clients of the API server.
type clients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
}

var (
	configMapObjects = &objectKind{
		plural: "ConfigMaps", gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: "ConfigMap",
		create: func(ctx context.Context, c clients, namespace, name string, seed uint64, size int) error {
			return benchkit.CreateConfigMap(ctx, c.typed, namespace, name, map[string]string{"app": "bench-versus"}, seed, size)
		},
		setData: func(ctx context.Context, c clients, namespace, name, key, value string) error {
			return benchkit.SetConfigMapData(ctx, c.typed, namespace, name, key, value)
		},
		remove: func(ctx context.Context, c clients, namespace, name string) error {
			return benchkit.DeleteConfigMap(ctx, c.typed, namespace, name)
		},
	}
	widgetObjects = &objectKind{
		plural: "Widgets", gvr: widgetGVR, kind: "Widget",
		install: installWidgets, create: createWidget, setData: setWidgetData, remove: deleteWidget,
	}
)

// resource is the kind's entry in BRIDGE_RESOURCES.
func (k *objectKind) resource() string {
	if k.gvr.Group == "" {
		return k.gvr.Resource
	}
	return k.gvr.Resource + "." + k.gvr.Version + "." + k.gvr.Group
}

// widgetGVR is the resource of fixtures.WidgetCRD.
var widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installWidgets creates the Widget CRD and waits until discovery serves
// it.
func installWidgets(ctx context.Context, c clients) error {
	_, err := c.dynamic.Resource(crdGVR).Create(ctx, fixtures.WidgetCRD(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Widget CRD: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return fixtures.WaitForWidgets(ctx, c.typed.Discovery())
}

// createWidget creates Widget namespace/name with the data a ConfigMap of
// the same seed and size would have. One that exists already counts as
// created.
func createWidget(ctx context.Context, c clients, namespace, name string, seed uint64, size int) error {
	rng := rand.New(rand.NewPCG(seed, 0x6b75626562726964))
	data := make(map[string]any, benchkit.DataKeys)
	for k := range benchkit.DataKeys {
		data["key-"+strconv.Itoa(k)] = fixtures.RandomData(rng, size/benchkit.DataKeys)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGVR.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"app": "bench-versus"}},
		"data":     data,
	}}
	return benchkit.Retry(ctx, func() error {
		_, err := c.dynamic.Resource(widgetGVR).Namespace(namespace).Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func setWidgetData(ctx context.Context, c clients, namespace, name, key, value string) error {
	body, err := json.Marshal(map[string]any{"data": map[string]string{key: value}})
	if err != nil {
		return err
	}
	return benchkit.Retry(ctx, func() error {
		_, err := c.dynamic.Resource(widgetGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
}

func deleteWidget(ctx context.Context, c clients, namespace, name string) error {
	return benchkit.Retry(ctx, func() error {
		err := c.dynamic.Resource(widgetGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

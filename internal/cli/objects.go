package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// gvkOf is an object's group, version and kind: from its own apiVersion
// and kind, which the bridge always sets, else from the scheme.
func gvkOf(obj runtime.Object) schema.GroupVersionKind {
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk
	}
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return schema.GroupVersionKind{}
}

// toMap is the object as kubectl prints it with -o json|yaml: a map, so
// that keys come sorted, with apiVersion and kind set.
func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	gvk := gvkOf(obj)
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return m, nil
}

// writeObjects prints objs as kubectl get -o json|yaml does: one object
// alone when one was asked for by name, else a List.
func writeObjects(w io.Writer, format string, objs []runtime.Object, single bool) error {
	var v any
	if single && len(objs) == 1 {
		m, err := toMap(objs[0])
		if err != nil {
			return err
		}
		v = m
	} else {
		items := make([]any, 0, len(objs))
		for _, o := range objs {
			m, err := toMap(o)
			if err != nil {
				return err
			}
			items = append(items, m)
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
	}
	var b []byte
	var err error
	switch format {
	case "json":
		b, err = json.MarshalIndent(v, "", "    ")
		b = append(b, '\n')
	case "yaml":
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unknown output format %q", format)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeNames prints kind[.group]/name per object, as -o name does.
func writeNames(w io.Writer, objs []runtime.Object) error {
	for _, o := range objs {
		gvk := gvkOf(o)
		kind := strings.ToLower(gvk.Kind)
		if gvk.Group != "" {
			kind += "." + gvk.Group
		}
		name := ""
		if m, err := meta.Accessor(o); err == nil {
			name = m.GetName()
		}
		if _, err := fmt.Fprintf(w, "%s/%s\n", kind, name); err != nil {
			return err
		}
	}
	return nil
}

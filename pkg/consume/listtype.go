package consume

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// What a ListWatch needs of the API's conventions: list types, selectors,
// keys.

// newList returns an empty list of example's type: the scheme's
// <Kind>List for a typed object, an UnstructuredList for an Unstructured.
func (c *Client) newList(example runtime.Object) (runtime.Object, error) {
	switch ex := example.(type) {
	case nil:
		return nil, fmt.Errorf("%w: no example object", ErrBadOption)
	case *unstructured.Unstructured:
		gvk := ex.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, fmt.Errorf("%w: an Unstructured example object needs apiVersion and kind", ErrBadOption)
		}
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(ex.GetAPIVersion())
		l.SetKind(gvk.Kind + "List")
		return l, nil
	}
	gvks, _, err := c.dec.scheme.ObjectKinds(example)
	if err != nil {
		return nil, fmt.Errorf("%w: example object %T: %w", ErrBadOption, example, err)
	}
	gvk := gvks[0]
	l, err := c.dec.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil || !meta.IsListType(l) {
		return nil, fmt.Errorf("%w: the scheme has no list type for %s", ErrBadOption, gvk)
	}
	return l, nil
}

// fillList sets a list's items and resourceVersion.
func (c *Client) fillList(list runtime.Object, items []runtime.Object, rv string) error {
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		for _, o := range items {
			ul.Items = append(ul.Items, *o.(*unstructured.Unstructured))
		}
		ul.SetResourceVersion(rv)
		return nil
	}
	if err := meta.SetList(list, items); err != nil {
		return fmt.Errorf("consume: fill a %T: %w", list, err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return fmt.Errorf("consume: %T: %w", list, err)
	}
	la.SetResourceVersion(rv)
	return nil
}

// selectors are a list or watch's label and field selectors.
type selectors struct {
	labels labels.Selector
	fields fields.Selector
}

// Field selectors apply to what every object has.
const (
	fieldName      = "metadata.name"
	fieldNamespace = "metadata.namespace"
)

// everything reports whether every object matches.
func (s selectors) everything() bool { return s.labels.Empty() && s.fields.Empty() }

func parseSelectors(o metav1.ListOptions) (selectors, error) {
	ls, err := labels.Parse(o.LabelSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("consume: label selector: %v", err))
	}
	fs, err := fields.ParseSelector(o.FieldSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("consume: field selector: %v", err))
	}
	for _, r := range fs.Requirements() {
		if r.Field != fieldName && r.Field != fieldNamespace {
			return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("consume: field selector on %s: only %s and %s are served", r.Field, fieldName, fieldNamespace))
		}
	}
	return selectors{labels: ls, fields: fs}, nil
}

func (s selectors) matches(m metav1.Object) bool {
	return s.labels.Matches(labels.Set(m.GetLabels())) &&
		s.fields.Matches(fields.Set{fieldName: m.GetName(), fieldNamespace: m.GetNamespace()})
}

func (s selectors) String() string { return s.labels.String() + "; " + s.fields.String() }

// key is an object's cache key, as MetaNamespaceKeyFunc makes it.
func key(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// rvOf is obj's resourceVersion, "" if it has no metadata.
func rvOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func secondsDuration(n int64) time.Duration { return time.Duration(n) * time.Second }

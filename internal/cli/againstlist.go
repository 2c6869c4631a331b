package cli

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubebridge/kubebridge/internal/rules"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

// clusterLister lists a type from the apiserver: metadata only, unless
// the type has rules, whose match and ignored fields need the objects.
type clusterLister struct {
	meta metadata.Interface
	dyn  dynamic.Interface
}

// listedObject is one object of the apiserver's list: its identity, and
// its content (projected) when the type has rules.
type listedObject struct {
	ref     objectRef
	content map[string]any
}

// list lists the type within the scope; with rules r, the objects
// projected and only those in match. It sets d.NotServed when the
// apiserver does not serve the type.
func (l clusterLister) list(ctx context.Context, t streamType, scope consume.Scope, ns string, r *rules.Rules, d *clusterDiff) (map[string]listedObject, error) {
	gvr := schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
	listed := map[string]listedObject{}
	for _, n := range namespacesToList(scope.Namespaces, ns) {
		opts := metav1.ListOptions{Limit: 500, LabelSelector: scope.LabelSelector, FieldSelector: scope.FieldSelector}
		for {
			var next string
			var err error
			if r == nil {
				next, err = l.listMeta(ctx, gvr, n, opts, listed)
			} else {
				next, err = l.listObjects(ctx, gvr, n, opts, r, listed, d)
			}
			if apierrors.IsNotFound(err) {
				d.NotServed = true
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			if opts.Continue = next; next == "" {
				break
			}
		}
	}
	return listed, nil
}

// listMeta lists one page of metadata; it returns the continue token.
func (l clusterLister) listMeta(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, into map[string]listedObject) (string, error) {
	list, err := l.meta.Resource(gvr).Namespace(ns).List(ctx, opts)
	if err != nil {
		return "", err
	}
	for _, it := range list.Items {
		ref := objectRef{Key: keyOf(it.Namespace, it.Name), UID: string(it.UID), ResourceVersion: it.ResourceVersion}
		into[ref.Key] = listedObject{ref: ref}
	}
	return list.Continue, nil
}

// listObjects lists one page of objects, projects each and keeps those in
// match (or that it fails on: the bridge publishes them); it returns the
// continue token.
func (l clusterLister) listObjects(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, r *rules.Rules, into map[string]listedObject, d *clusterDiff) (string, error) {
	list, err := l.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
	if err != nil {
		return "", err
	}
	for _, it := range list.Items {
		ref := objectRef{Key: keyOf(it.GetNamespace(), it.GetName()), UID: string(it.GetUID()), ResourceVersion: it.GetResourceVersion()}
		r.Project(it.Object)
		in, err := r.Matches(it.Object)
		if err != nil {
			d.MatchErrors++
		}
		if in {
			into[ref.Key] = listedObject{ref: ref, content: it.Object}
		}
	}
	return list.GetContinue(), nil
}

// namespacesToList are the namespaces to list: those of the scope, or
// only flagNS among them when it is set; flagNS ("" for all) without a
// scope of namespaces. The scope's namespaces do not narrow a
// cluster-scoped type: the bridge does not stamp them on its markers.
func namespacesToList(scoped []string, flagNS string) []string {
	switch {
	case len(scoped) == 0:
		return []string{flagNS}
	case flagNS == "":
		return scoped
	case slices.Contains(scoped, flagNS):
		return []string{flagNS}
	}
	return nil
}

package informers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// ErrUnknownResource is returned for a name the API server does not serve.
var ErrUnknownResource = errors.New("unknown resource type")

// ErrNotWatchable is returned for a resource that cannot be listed and watched.
var ErrNotWatchable = errors.New("resource type cannot be listed and watched")

// Resolver maps the names kubectl accepts (plural, singular, short names,
// resource.group, resource.version.group) to resources, through discovery.
type Resolver struct {
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

// NewResolver returns a Resolver that asks disco, caching its answers.
func NewResolver(disco discovery.CachedDiscoveryInterface) *Resolver {
	deferred := restmapper.NewDeferredDiscoveryRESTMapper(disco)
	return &Resolver{
		discovery: disco,
		mapper:    restmapper.NewShortcutExpander(deferred, disco, nil),
	}
}

// Resolve maps name to a resource the way `kubectl get name` does.
func (r *Resolver) Resolve(ctx context.Context, name string) (*Resource, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fullySpecified, groupResource := schema.ParseResourceArg(name)
	var gvk schema.GroupVersionKind
	if fullySpecified != nil {
		gvk, _ = r.mapper.KindFor(*fullySpecified)
	}
	if gvk.Empty() {
		var err error
		gvk, err = r.mapper.KindFor(groupResource.WithVersion(""))
		if err != nil {
			if meta.IsNoMatchError(err) {
				return nil, fmt.Errorf("%w %q: the server does not serve it", ErrUnknownResource, name)
			}
			return nil, fmt.Errorf("resolve resource type %q: %w", name, err)
		}
	}
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resolve resource type %q: %w", name, err)
	}
	res := &Resource{
		GVR:        mapping.Resource,
		Kind:       mapping.GroupVersionKind.Kind,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace,
	}
	if err := r.checkVerbs(res); err != nil {
		return nil, fmt.Errorf("%w: %q (%s)", err, name, res)
	}
	return res, nil
}

func (r *Resolver) checkVerbs(res *Resource) error {
	list, err := r.discovery.ServerResourcesForGroupVersion(res.GVR.GroupVersion().String())
	if err != nil {
		return fmt.Errorf("discover %s: %w", res.GVR.GroupVersion(), err)
	}
	for _, api := range list.APIResources {
		if api.Name != res.GVR.Resource {
			continue
		}
		if slices.Contains(api.Verbs, "list") && slices.Contains(api.Verbs, "watch") {
			return nil
		}
		return ErrNotWatchable
	}
	return fmt.Errorf("%w: not in discovery", ErrUnknownResource)
}

package bridge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/rules"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Kube is what the bridge needs from the API server.
type Kube struct {
	Clients   informers.Clients
	Discovery discovery.CachedDiscoveryInterface
}

// KubeFromConfig builds clients the way kubectl finds its cluster: the
// in-cluster config in a pod without a kubeconfig, else KUBECONFIG or
// ~/.kube/config with its current (or BRIDGE_KUBE_CONTEXT) context.
// Built-in types are read as protobuf.
func KubeFromConfig(cfg *config.Config, userAgent string) (Kube, *rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.KubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return Kube{}, nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	rc.UserAgent = userAgent
	ApplyKubeSettings(rc, cfg)
	k, err := KubeFromREST(rc)
	return k, rc, err
}

// ApplyKubeSettings sets what cfg says of the API server's client on rc:
// its rate limits, and compression (off unless BRIDGE_KUBE_COMPRESSION,
// and never on where the kubeconfig turned it off).
func ApplyKubeSettings(rc *rest.Config, cfg *config.Config) {
	rc.QPS, rc.Burst = cfg.KubeQPS, cfg.KubeBurst
	rc.DisableCompression = rc.DisableCompression || !cfg.KubeCompression
}

// KubeFromREST builds the clients for rc.
func KubeFromREST(rc *rest.Config) (Kube, error) {
	typedCfg := rest.CopyConfig(rc)
	typedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	typedCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typed, err := kubernetes.NewForConfig(typedCfg)
	if err != nil {
		return Kube{}, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Kube{}, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return Kube{}, fmt.Errorf("kubernetes discovery client: %w", err)
	}
	return Kube{Clients: informers.Clients{Typed: typed, Dynamic: dyn, Config: typedCfg}, Discovery: memory.NewMemCacheClient(disco)}, nil
}

// watch is one resource type to run informers for.
type watch struct {
	resource *informers.Resource
	scope    informers.Scope
	names    []string
	// rules are the type's publishing rules; nil when it has none.
	rules *rules.Rules
}

// resolveWatches resolves every configured name and merges names that
// denote the same type, so no type is watched twice. Unknown names and
// conflicting scopes are configuration errors, all reported together.
func resolveWatches(ctx context.Context, cfg *config.Config, r *informers.Resolver) ([]watch, error) {
	var out []watch
	var problems []string
	for _, spec := range cfg.Resources {
		res, err := r.Resolve(ctx, spec.Name)
		if err != nil {
			if !errors.Is(err, informers.ErrUnknownResource) && !errors.Is(err, informers.ErrNotWatchable) {
				return nil, err
			}
			problems = append(problems, "BRIDGE_RESOURCES: "+err.Error())
			continue
		}
		scope := informers.Scope{Namespaces: spec.Namespaces, LabelSelector: spec.LabelSelector, FieldSelector: spec.FieldSelector,
			Match: spec.Rules.Match, IgnoreFields: spec.Rules.IgnoreFields}
		if !res.Namespaced && len(spec.Namespaces) > 0 {
			problems = append(problems, fmt.Sprintf("BRIDGE_RESOURCES: %s is cluster-scoped; namespaces= does not apply", spec.Name))
			continue
		}
		if res.Namespaced && len(scope.Namespaces) == 0 {
			scope.Namespaces = cfg.Namespaces
		}
		if !res.Namespaced {
			scope.Namespaces = nil
		}
		slices.Sort(scope.Namespaces)
		scope.Namespaces = slices.Compact(scope.Namespaces)
		i := slices.IndexFunc(out, func(w watch) bool { return w.resource.GVR == res.GVR })
		if i < 0 {
			out = append(out, watch{resource: res, scope: scope, names: []string{spec.Name}, rules: spec.Compiled})
			continue
		}
		if !scopeEqual(out[i].scope, scope) || !reflect.DeepEqual(out[i].rules.Spec(), spec.Compiled.Spec()) {
			problems = append(problems, fmt.Sprintf("BRIDGE_RESOURCES: %s and %s are both %s with different scopes or rules; configure it once", strings.Join(out[i].names, ", "), spec.Name, res))
			continue
		}
		out[i].names = append(out[i].names, spec.Name)
	}
	if len(problems) > 0 {
		return nil, &config.Error{Problems: problems}
	}
	return out, nil
}

func scopeEqual(a, b informers.Scope) bool {
	return slices.Equal(a.Namespaces, b.Namespaces) && a.LabelSelector == b.LabelSelector && a.FieldSelector == b.FieldSelector &&
		a.Match == b.Match && reflect.DeepEqual(a.IgnoreFields, b.IgnoreFields)
}

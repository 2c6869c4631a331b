package informers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

var watchVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func newTestResolver() *informers.Resolver {
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: watchVerbs, ShortNames: []string{"cm"}},
				{Name: "bindings", SingularName: "binding", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}},
			},
		},
		{
			GroupVersion: "apps/v1",
			APIResources: []metav1.APIResource{
				{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: watchVerbs, ShortNames: []string{"deploy"}, Categories: []string{"all"}},
				{Name: "deployments/status", SingularName: "", Namespaced: true, Kind: "Deployment", Verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			GroupVersion: "example.com/v1",
			APIResources: []metav1.APIResource{
				{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", Verbs: watchVerbs},
			},
		},
		{
			GroupVersion: "rbac.authorization.k8s.io/v1",
			APIResources: []metav1.APIResource{
				{Name: "clusterroles", SingularName: "clusterrole", Namespaced: false, Kind: "ClusterRole", Verbs: watchVerbs},
			},
		},
	}}}
	return informers.NewResolver(memory.NewMemCacheClient(disco))
}

func TestResolve(t *testing.T) {
	configmaps := informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	deployments := informers.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	widgets := informers.Resource{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	clusterroles := informers.Resource{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole", Namespaced: false}

	cases := []struct {
		name string
		want informers.Resource
	}{
		{"configmaps", configmaps},
		{"configmap", configmaps},
		{"cm", configmaps},
		// The RESTMapper lower-cases the name before matching, so the kind
		// as written in a manifest resolves like the singular (kubectl
		// get ConfigMap works the same way).
		{"ConfigMap", configmaps},
		{"CONFIGMAPS", configmaps},
		// resource.version.group with the empty core group: the trailing
		// dot is what makes it three parts (kubectl get configmaps.v1.).
		{"configmaps.v1.", configmaps},
		{"deploy", deployments},
		{"deployments", deployments},
		{"deployments.apps", deployments},
		{"deployment.apps", deployments},
		{"deployments.v1.apps", deployments},
		{"widgets", widgets},
		{"widget", widgets},
		{"widgets.example.com", widgets},
		{"widgets.v1.example.com", widgets},
		{"Widget", widgets},
		{"clusterroles", clusterroles},
		{"clusterroles.rbac.authorization.k8s.io", clusterroles},
		{"clusterroles.v1.rbac.authorization.k8s.io", clusterroles},
	}
	r := newTestResolver()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tc.name)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.name, err)
			}
			if *got != tc.want {
				t.Errorf("Resolve(%q) = %s kind=%s namespaced=%v, want %s kind=%s namespaced=%v",
					tc.name, got, got.Kind, got.Namespaced, &tc.want, tc.want.Kind, tc.want.Namespaced)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	r := newTestResolver()
	for _, name := range []string{
		"frobs",
		"frobs.example.com",
		"deployments.v1.nope",
		"widgets.v2.example.com.nope",
		"widgets.v2.example.com", // a version the server does not serve
		// Without the trailing dot this is resource "configmaps" in a group
		// called "v1", as for kubectl; note that Resource.String() writes
		// core types this way, so its output is not always a name Resolve
		// accepts.
		"configmaps.v1",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Resolve(context.Background(), name)
			if !errors.Is(err, informers.ErrUnknownResource) {
				t.Fatalf("Resolve(%q) = %+v, %v; want ErrUnknownResource", name, res, err)
			}
			if !strings.Contains(err.Error(), `"`+name+`"`) {
				t.Errorf("error %q does not name %q", err, name)
			}
			if errors.Is(err, informers.ErrNotWatchable) {
				t.Errorf("error %q is also ErrNotWatchable", err)
			}
		})
	}
}

func TestResolveNotWatchable(t *testing.T) {
	r := newTestResolver()
	for _, name := range []string{"bindings", "binding", "bindings.v1."} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Resolve(context.Background(), name)
			if !errors.Is(err, informers.ErrNotWatchable) {
				t.Fatalf("Resolve(%q) = %+v, %v; want ErrNotWatchable", name, res, err)
			}
			if errors.Is(err, informers.ErrUnknownResource) {
				t.Errorf("error %q is also ErrUnknownResource", err)
			}
			if !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "bindings.v1") {
				t.Errorf("error %q does not name %q and the resolved resource", err, name)
			}
		})
	}
}

func TestResolveCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTestResolver().Resolve(ctx, "configmaps"); !errors.Is(err, context.Canceled) {
		t.Errorf("Resolve with a canceled context: %v, want context.Canceled", err)
	}
}

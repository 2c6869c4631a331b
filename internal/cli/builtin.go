package cli

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// shortNames are kubectl's short names of built-in resources (the
// apiserver serves them through discovery, which the stream does not
// carry).
func shortNames() map[string]string {
	return map[string]string{
		"cm": "configmaps", "cs": "componentstatuses", "ep": "endpoints", "ev": "events",
		"limits": "limitranges", "ns": "namespaces", "no": "nodes", "pvc": "persistentvolumeclaims",
		"pv": "persistentvolumes", "po": "pods", "rc": "replicationcontrollers", "quota": "resourcequotas",
		"sa": "serviceaccounts", "svc": "services", "crd": "customresourcedefinitions",
		"crds": "customresourcedefinitions", "ds": "daemonsets", "deploy": "deployments",
		"rs": "replicasets", "sts": "statefulsets", "hpa": "horizontalpodautoscalers", "cj": "cronjobs",
		"csr": "certificatesigningrequests", "ing": "ingresses", "netpol": "networkpolicies",
		"pdb": "poddisruptionbudgets", "pc": "priorityclasses", "sc": "storageclasses",
	}
}

// builtinNames maps the names people type for built-in types (plural,
// singular, kind, short name; lowercase) to their group and plural
// resource, from client-go's scheme (every built-in kind) and the short
// names above.
func builtinNames() map[string][]schema.GroupResource {
	out := map[string][]schema.GroupResource{}
	add := func(name string, gr schema.GroupResource) {
		for _, have := range out[name] {
			if have == gr {
				return
			}
		}
		out[name] = append(out[name], gr)
	}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		// Objects have metadata; options and events of the API do not.
		if typ.Kind() != reflect.Struct {
			continue
		}
		if _, ok := typ.FieldByName("ObjectMeta"); !ok {
			continue
		}
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		gr := plural.GroupResource()
		add(plural.Resource, gr)
		add(singular.Resource, gr)
	}
	for short, plural := range shortNames() {
		for _, gr := range out[plural] {
			add(short, gr)
		}
	}
	return out
}

// preferGroup picks, among groups that serve one resource name, the one
// kubectl would: the core group, else any but the legacy extensions
// group. It returns false when that leaves more than one.
func preferGroup(grs []schema.GroupResource) (schema.GroupResource, bool) {
	var rest []schema.GroupResource
	for _, gr := range grs {
		if gr.Group == "" {
			return gr, true
		}
		if gr.Group != "extensions" {
			rest = append(rest, gr)
		}
	}
	if len(rest) == 0 {
		rest = grs
	}
	if len(rest) == 1 {
		return rest[0], true
	}
	return schema.GroupResource{}, false
}

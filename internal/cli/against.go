package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebridge/kubebridge/internal/rules"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

// clusterDiff is how one type's replayed state differs from the
// apiserver's list.
type clusterDiff struct {
	Type string `json:"type"`
	// Scope is what the bridge watches the type for, from its snapshot
	// begin markers ("" for everything): the cluster is listed within it.
	Scope     string `json:"scope,omitempty"`
	InStream  int    `json:"inStream"`
	InCluster int    `json:"inCluster"`
	// NotServed is set when the apiserver does not serve the type.
	NotServed bool `json:"notServed,omitempty"`
	// MatchErrors counts the listed objects the scope's match failed on:
	// they count as in scope, as the bridge publishes them.
	MatchErrors int `json:"matchErrors,omitempty"`
	// Missing objects are listed but not in the replayed state; Extra
	// ones the other way round; Differ are in both under another uid or
	// resourceVersion.
	Missing []objectRef  `json:"missing,omitempty"`
	Extra   []objectRef  `json:"extra,omitempty"`
	Differ  []objectDiff `json:"differ,omitempty"`
}

type objectRef struct {
	Key             string `json:"key"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}

type objectDiff struct {
	Key     string    `json:"key"`
	Stream  objectRef `json:"stream"`
	Cluster objectRef `json:"cluster"`
	// Fields, when the uids are the same, names the fields whose content
	// differs (compared when the scope ignores fields: contract §11).
	Fields string `json:"fields,omitempty"`
}

// compareWithCluster lists every type verify replayed from the
// apiserver (metadata only) and records how the replayed states differ.
func compareWithCluster(ctx context.Context, e *env, f verifyFlags, v *verifier, rep *report) error {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := e.getenv("KUBECONFIG"); kc != "" {
		loading.Precedence = filepath.SplitList(kc)
	}
	loading.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides).ClientConfig()
	if err != nil {
		return err
	}
	var l clusterLister
	if l.meta, err = metadata.NewForConfig(rc); err != nil {
		return err
	}
	if l.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return err
	}
	for _, tc := range v.types {
		d, err := compareType(ctx, l, tc, f.namespace)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.t.filter(), err)
		}
		rep.Differences += uint64(len(d.Missing) + len(d.Extra) + len(d.Differ))
		if d.NotServed {
			rep.Differences += uint64(d.InStream)
		}
		rep.Against = append(rep.Against, d)
	}
	slices.SortFunc(rep.Against, func(a, b clusterDiff) int {
		if a.Type < b.Type {
			return -1
		}
		if a.Type > b.Type {
			return 1
		}
		return 0
	})
	return nil
}

func compareType(ctx context.Context, l clusterLister, tc *typeCheck, ns string) (clusterDiff, error) {
	d := clusterDiff{Type: tc.t.filter()}
	stream, objs, err := streamObjects(tc)
	if err != nil {
		return d, err
	}
	d.InStream = len(stream)
	// Within the scope the bridge watches the type with, as its begin
	// markers say: what it does not watch is not in the stream.
	scope, _ := tc.a.Scope(tc.t.filter())
	d.Scope = scopeOf(scope)
	r, err := scopeRules(scope)
	if err != nil {
		return d, err
	}
	listed, err := l.list(ctx, tc.t, scope, ns, r, &d)
	if err != nil || d.NotServed {
		return d, err
	}
	d.InCluster = len(listed)
	// Updates of ignored fields only are not published: the stream's
	// resourceVersion may be older than the cluster's, so the content is
	// compared instead (contract §11).
	byContent := len(scope.IgnoreFields) > 0
	for _, k := range sortedKeys(listed) {
		s, ok := stream[k]
		c := listed[k]
		switch {
		case !ok:
			d.Missing = append(d.Missing, c.ref)
		case s.UID != c.ref.UID || !byContent && s.ResourceVersion != c.ref.ResourceVersion:
			d.Differ = append(d.Differ, objectDiff{Key: k, Stream: s, Cluster: c.ref})
		case byContent && s.ResourceVersion != c.ref.ResourceVersion && !tc.truncated[k]:
			fields, err := contentDiff(objs[k], c.content)
			if err != nil {
				return d, fmt.Errorf("%s: %w", k, err)
			}
			if fields != "" {
				d.Differ = append(d.Differ, objectDiff{Key: k, Stream: s, Cluster: c.ref, Fields: fields})
			}
		}
	}
	for _, k := range sortedKeys(stream) {
		if _, ok := listed[k]; !ok {
			d.Extra = append(d.Extra, stream[k])
		}
	}
	return d, nil
}

// streamObjects are the objects of the type's replayed state, by key.
func streamObjects(tc *typeCheck) (map[string]objectRef, map[string]runtime.Object, error) {
	refs, objs := map[string]objectRef{}, map[string]runtime.Object{}
	for _, o := range tc.a.Indexer(tc.t.filter()).List() {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, nil, err
		}
		ref := objectRef{Key: keyOf(m.GetNamespace(), m.GetName()), UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}
		refs[ref.Key] = ref
		if ro, ok := o.(runtime.Object); ok {
			objs[ref.Key] = ro
		}
	}
	return refs, objs, nil
}

// scopeRules compiles the rules a scope says (match, ignored fields), nil
// when it says none.
func scopeRules(scope consume.Scope) (*rules.Rules, error) {
	if scope.Match == "" && len(scope.IgnoreFields) == 0 {
		return nil, nil
	}
	r, err := rules.Compile(rules.Spec{Match: scope.Match, IgnoreFields: scope.IgnoreFields, OldObject: true})
	if err != nil {
		return nil, fmt.Errorf("the rules of its begin markers: %w", err)
	}
	return r, nil
}

// scopeOf describes a scope for the report; "" for everything.
func scopeOf(s consume.Scope) string {
	var parts []string
	if len(s.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(s.Namespaces, ","))
	}
	if s.LabelSelector != "" {
		parts = append(parts, "labels "+s.LabelSelector)
	}
	if s.FieldSelector != "" {
		parts = append(parts, "fields "+s.FieldSelector)
	}
	if s.Match != "" {
		parts = append(parts, "match "+s.Match)
	}
	if len(s.IgnoreFields) > 0 {
		// Paths of strings always marshal.
		b, _ := json.Marshal(s.IgnoreFields)
		parts = append(parts, "ignoreFields "+string(b))
	}
	return strings.Join(parts, "; ")
}

func keyOf(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

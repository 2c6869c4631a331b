package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

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
}

// compareWithCluster lists every type verify replayed from the
// apiserver (metadata only) and records how the replayed states differ.
func compareWithCluster(ctx context.Context, e *env, f verifyFlags, v *verifier, rep *report) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := e.getenv("KUBECONFIG"); kc != "" {
		rules.Precedence = filepath.SplitList(kc)
	}
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return err
	}
	client, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	for _, tc := range v.types {
		d, err := compareType(ctx, client, tc, f.namespace)
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

func compareType(ctx context.Context, client metadata.Interface, tc *typeCheck, ns string) (clusterDiff, error) {
	d := clusterDiff{Type: tc.t.filter()}
	stream := map[string]objectRef{}
	for _, o := range tc.a.Indexer(tc.t.filter()).List() {
		m, err := meta.Accessor(o)
		if err != nil {
			return d, err
		}
		ref := objectRef{Key: keyOf(m.GetNamespace(), m.GetName()), UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}
		stream[ref.Key] = ref
	}
	d.InStream = len(stream)
	// Within the scope the bridge watches the type with, as its begin
	// markers say: what it does not watch is not in the stream.
	scope, _ := tc.a.Scope(tc.t.filter())
	d.Scope = scopeOf(scope)
	gvr := schema.GroupVersionResource{Group: tc.t.Group, Version: tc.t.Version, Resource: tc.t.Resource}
	listed := map[string]objectRef{}
	for _, n := range namespacesToList(scope.Namespaces, ns) {
		opts := metav1.ListOptions{Limit: 500, LabelSelector: scope.LabelSelector, FieldSelector: scope.FieldSelector}
		for {
			list, err := client.Resource(gvr).Namespace(n).List(ctx, opts)
			if apierrors.IsNotFound(err) {
				d.NotServed = true
				return d, nil
			}
			if err != nil {
				return d, err
			}
			for _, it := range list.Items {
				ref := objectRef{Key: keyOf(it.Namespace, it.Name), UID: string(it.UID), ResourceVersion: it.ResourceVersion}
				listed[ref.Key] = ref
			}
			if opts.Continue = list.Continue; opts.Continue == "" {
				break
			}
		}
	}
	d.InCluster = len(listed)
	for _, k := range sortedKeys(listed) {
		s, ok := stream[k]
		c := listed[k]
		switch {
		case !ok:
			d.Missing = append(d.Missing, c)
		case s.UID != c.UID || s.ResourceVersion != c.ResourceVersion:
			d.Differ = append(d.Differ, objectDiff{Key: k, Stream: s, Cluster: c})
		}
	}
	for _, k := range sortedKeys(stream) {
		if _, ok := listed[k]; !ok {
			d.Extra = append(d.Extra, stream[k])
		}
	}
	return d, nil
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
	return strings.Join(parts, "; ")
}

func keyOf(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func sortedKeys(m map[string]objectRef) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (r report) writeAgainst(w io.Writer, maxPerKind int) {
	if r.Against == nil {
		return
	}
	fmt.Fprintln(w, "Against the cluster:")
	for _, d := range r.Against {
		if d.NotServed {
			fmt.Fprintf(w, "  %s: %d in the stream; the apiserver does not serve the type\n", d.Type, d.InStream)
			continue
		}
		within := ""
		if d.Scope != "" {
			within = " (within the bridge's scope: " + d.Scope + ")"
		}
		fmt.Fprintf(w, "  %s: %d in the stream, %d in the cluster%s: %d missing, %d extra, %d at another uid or resourceVersion\n",
			d.Type, d.InStream, d.InCluster, within, len(d.Missing), len(d.Extra), len(d.Differ))
		for i, m := range d.Missing {
			if i == maxPerKind {
				fmt.Fprintf(w, "    missing  … and %d more\n", len(d.Missing)-i)
				break
			}
			fmt.Fprintf(w, "    missing  %s (uid %s, rv %s)\n", m.Key, m.UID, m.ResourceVersion)
		}
		for i, x := range d.Extra {
			if i == maxPerKind {
				fmt.Fprintf(w, "    extra    … and %d more\n", len(d.Extra)-i)
				break
			}
			fmt.Fprintf(w, "    extra    %s (uid %s, rv %s)\n", x.Key, x.UID, x.ResourceVersion)
		}
		for i, x := range d.Differ {
			if i == maxPerKind {
				fmt.Fprintf(w, "    differs  … and %d more\n", len(d.Differ)-i)
				break
			}
			fmt.Fprintf(w, "    differs  %s: stream uid %s rv %s, cluster uid %s rv %s\n", x.Key, x.Stream.UID, x.Stream.ResourceVersion, x.Cluster.UID, x.Cluster.ResourceVersion)
		}
	}
	fmt.Fprintln(w)
}

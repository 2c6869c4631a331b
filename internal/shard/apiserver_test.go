package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// The package's environment runs kube-apiserver with KEP-5866's sharded
// list and watch on; TestAPIServerWithoutTheGate starts its own without.
const gate = "--feature-gates=ShardedListAndWatch=true"

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{APIServerFlags: []string{gate}})
}

// client is a clientset of the package's apiserver (the gate on); it
// skips the test without the binaries.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testenv.Get(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// seed creates namespaces named prefix-00 … and one ConfigMap in each,
// and returns the namespaces.
func seed(ctx context.Context, t *testing.T, cs kubernetes.Interface, prefix string, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		ns := fmt.Sprintf("%s-%02d", prefix, i)
		names = append(names, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// split returns the namespaces sh owns and the others; the tests need some
// of each.
func split(t *testing.T, sh Shard, all []string) (owned, others []string) {
	t.Helper()
	for _, ns := range all {
		if Owns(sh, ns, "") {
			owned = append(owned, ns)
		} else {
			others = append(others, ns)
		}
	}
	if len(owned) == 0 || len(others) == 0 {
		t.Fatalf("shard %s owns %v of %v: the test needs some of each", sh, owned, all)
	}
	return owned, others
}

func namespacesOf(items []corev1.ConfigMap) []string {
	var out []string
	for _, cm := range items {
		if !slices.Contains(out, cm.Namespace) {
			out = append(out, cm.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// With the gate on, a list and a watch with a shard's NamespaceSelector
// see the objects of exactly the shard's namespaces, and the list echoes
// the selector: what ServerFiltered reads.
func TestAPIServerFiltersByNamespaceSelector(t *testing.T) {
	cs := client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	all := seed(ctx, t, cs, "filter", 12)
	owned, others := split(t, Shard{Index: 1, Count: 3}, all)
	sel := NamespaceSelector(owned)
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if !ServerFiltered(list.ShardInfo, sel) {
		t.Fatalf("shardInfo %+v: the apiserver did not say it filtered", list.ShardInfo)
	}
	// Not only seeded namespaces: whatever else holds ConfigMaps
	// (kube-system) must be left out too.
	if got := namespacesOf(list.Items); !slices.Equal(got, owned) {
		t.Fatalf("list returned namespaces %v, want the shard's %v", got, owned)
	}

	w, err := cs.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ShardSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Another shard's change first: events come in resourceVersion order,
	// so had it passed the filter it would arrive before the shard's own.
	for _, ns := range []string{others[0], owned[0]} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Namespace != owned[0] || cm.Name != "later" {
			t.Fatalf("first watch event %s %T %+v, want the shard's added later in %s", ev.Type, ev.Object, ev.Object, owned[0])
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
}

// A selector joins one point range per namespace, so a shard of a cluster
// with many namespaces sends a long one: the apiserver takes one of
// SelectorLimit characters and refuses a longer one.
func TestAPIServerSelectorLimit(t *testing.T) {
	cs := client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The longest selector of whole ranges within the limit, and one range more.
	var names []string
	for i := 0; len(NamespaceSelector(append(names, fmt.Sprintf("long-%05d", i)))) <= SelectorLimit; i++ {
		names = append(names, fmt.Sprintf("long-%05d", i))
	}
	fits := NamespaceSelector(names)
	over := NamespaceSelector(append(names, "long-overflow"))
	t.Logf("%d namespaces in %d characters; %d in %d", len(names), len(fits), len(names)+1, len(over))
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: fits})
	if err != nil || !ServerFiltered(list.ShardInfo, fits) {
		t.Fatalf("selector of %d characters: err %v, shardInfo %+v; want it taken", len(fits), err, list)
	}
	if _, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: over}); err == nil {
		t.Fatalf("selector of %d characters taken; want it refused above %d", len(over), SelectorLimit)
	}
}

// Without the gate the apiserver ignores the selector: the list holds
// every namespace's objects and no shardInfo, which is how a shard knows
// to filter itself.
func TestAPIServerWithoutTheGate(t *testing.T) {
	testenv.Get(t) // skips without binaries
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	testenv.SkipIfNoBinaries(t, err)
	t.Cleanup(func() { env.Close() })
	cs, err := kubernetes.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	all := seed(ctx, t, cs, "nogate", 4)
	sel := NamespaceSelector(all[:1])
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if ServerFiltered(list.ShardInfo, sel) {
		t.Fatalf("shardInfo %+v without the gate", list.ShardInfo)
	}
	got := namespacesOf(list.Items)
	for _, ns := range all {
		if !slices.Contains(got, ns) {
			t.Fatalf("list without the gate returned namespaces %v, want every one of %v", got, all)
		}
	}
}

// With the gate on, a list and a watch with an ExcludeSelector of the
// other shards' namespaces leave those out, and keep the shard's own and
// a namespace created after the selector was built.
func TestAPIServerFiltersByExcludeSelector(t *testing.T) {
	cs := client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	all := seed(ctx, t, cs, "exclude", 12)
	owned, others := split(t, Shard{Index: 0, Count: 3}, all)
	sel := ExcludeSelector(others)
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if !ServerFiltered(list.ShardInfo, sel) {
		t.Fatalf("shardInfo %+v: the apiserver did not say it filtered", list.ShardInfo)
	}
	got := namespacesOf(list.Items)
	for _, ns := range owned {
		if !slices.Contains(got, ns) {
			t.Errorf("the list lacks the shard's %s (has %v)", ns, got)
		}
	}
	for _, ns := range others {
		if slices.Contains(got, ns) {
			t.Errorf("the list has %s, another shard's", ns)
		}
	}
	w, err := cs.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ShardSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A namespace the selector never heard of: it must come through.
	fresh := seed(ctx, t, cs, "exclude-later", 1)[0]
	if _, err := cs.CoreV1().ConfigMaps(others[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(owned[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			seen = append(seen, cm.Namespace+"/"+cm.Name)
		case <-ctx.Done():
			t.Fatalf("watch events %v, want %s/cm then %s/later", seen, fresh, owned[0])
		}
	}
	if want := []string{fresh + "/cm", owned[0] + "/later"}; !slices.Equal(seen, want) {
		t.Errorf("watch events %v, want %v (nothing of %s)", seen, want, others[0])
	}
}

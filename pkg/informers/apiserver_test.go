package informers

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Setup: func(ctx context.Context, env *testenv.Env) error {
		dyn, err := dynamic.NewForConfig(env.RESTConfig())
		if err != nil {
			return err
		}
		kube, err := kubernetes.NewForConfig(env.RESTConfig())
		if err != nil {
			return err
		}
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		if _, err := dyn.Resource(crds).Create(ctx, fixtures.WidgetCRD(), metav1.CreateOptions{}); err != nil {
			return err
		}
		return fixtures.WaitForWidgets(ctx, kube.Discovery())
	}})
}

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// On a real apiserver, a Source WithCompactDecoding caches the Widgets
// exactly as the Unstructured way would (the dynamic client's objects,
// trimmed, then compacted), through its watch-list start and through live
// changes; and the apiserver's JSON of a Widget is copied, not decoded
// the Unstructured way, except where it has a number that is no int64.
func TestCompactDecodingOnTheAPIServer(t *testing.T) {
	env := testenv.Get(t)
	c := env.Clients(t)
	ctx := context.Background()
	const ns = "compact"
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := c.Dynamic.Resource(widgetsGVR).Namespace(ns)
	create := func(name string, content map[string]any, edit func(*unstructured.Unstructured)) {
		u := widget(ns, name, "")
		for k, v := range content {
			u.Object[k] = v
		}
		if edit != nil {
			edit(u)
		}
		if _, err := widgets.Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
			t.Fatal(err)
		}
	}
	create("plain", map[string]any{"data": map[string]any{"key-0": "value", "key-1": "x"}}, nil)
	create("escapes", map[string]any{"data": map[string]any{"html": "<b> & \"q\" \\", "lines": "a\nb\u2028c\td", "unicode": "é 日本 \U0001F600"}}, nil)
	create("numbers", map[string]any{"spec": map[string]any{"i": int64(3), "neg": int64(-7), "f": 1.5}}, nil)
	create("meta", map[string]any{"spec": map[string]any{"list": []any{map[string]any{"b": true, "a": nil}, []any{}, map[string]any{}}}}, func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"app": "compact", "tier": "x"})
		u.SetAnnotations(map[string]string{LastAppliedAnnotation: `{"spec":{}}`, "note": "kept"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0e0e0e0e-1111-4222-8333-444444444444"}})
		u.SetFinalizers([]string{"example.com/hold"})
	})
	// A deletion timestamp: the finalizer holds the object.
	if err := widgets.Delete(ctx, "meta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = widgets.Patch(context.Background(), "meta", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	trims := TransformOptions{StripManagedFields: true, StripLastApplied: true}
	res := &Resource{GVR: widgetsGVR, Kind: "Widget", Namespaced: true}
	clients := Clients{Config: c.REST, Typed: c.Kube, Dynamic: c.Dynamic}
	s := startSource(t, clients, res, Scope{Namespaces: []string{ns}}, trims.Transform(), &recordQueue{}, WithCompactDecoding(trims))
	sameAsUnstructured(t, s, widgets, trims, 4)

	// Live changes, after the watch-list start.
	u, err := widgets.Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["data"] = map[string]any{"key-0": "changed <now>"}
	if u, err = widgets.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("later", map[string]any{"data": map[string]any{"k": "v"}}, nil)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		objs := s.List()
		for _, o := range objs {
			if c := o.(*Compact); c.Name == "plain" && c.ResourceVersion != u.GetResourceVersion() {
				return false, nil
			}
		}
		return len(objs) == 5, nil
	})
	if err != nil {
		t.Fatalf("the cache never had the update and the new Widget: %v", s.List())
	}
	sameAsUnstructured(t, s, widgets, trims, 5)

	// A shard's Source (ownedInformer) decodes the same way and keeps
	// only what it owns.
	owns := func(_, name string) bool { return name != "numbers" }
	sharded := startSource(t, clients, res, Scope{}, trims.Transform(), &recordQueue{}, WithCompactDecoding(trims), WithOwns(owns))
	if got := len(sharded.List()); got != 4 {
		t.Fatalf("the shard's Source cached %d Widgets, want the 4 it owns", got)
	}
	for _, o := range sharded.List() {
		got, ok := o.(*Compact)
		if !ok {
			t.Fatalf("the shard's Source cached a %T", o)
		}
		for _, w := range s.List() {
			if w := w.(*Compact); w.Name == got.Name && !reflect.DeepEqual(w, got) {
				t.Errorf("%s: the shard's Source cached\n%s\nthe other\n%s", got.Name, got.RawJSON(), w.RawJSON())
			}
		}
	}

	// Which way the decoder took, on the apiserver's own JSON.
	d := newCompactDecoder(trims, res, nil)
	for name, copies := range map[string]bool{"plain": true, "escapes": true, "meta": true, "numbers": false} {
		raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces", ns, "widgets", name).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.copied(raw)
		if copied := err == nil; copied != copies || (!copied && !errors.Is(err, errNotCanonical)) {
			t.Errorf("%s: copied %v (%v), want %v:\n%s", name, copied, err, copies, raw)
		}
	}
}

// sameAsUnstructured checks that s caches n Widgets, each as the
// Unstructured way caches what the dynamic client gets.
func sameAsUnstructured(t *testing.T, s *Source, widgets interface {
	List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
}, trims TransformOptions, n int) {
	t.Helper()
	list, err := widgets.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*Compact{}
	for i := range list.Items {
		out, err := compacting(trims.Transform(), s.Resource, nil)(&list.Items[i])
		if err != nil {
			t.Fatal(err)
		}
		want[list.Items[i].GetName()] = out.(*Compact)
	}
	cached := s.List()
	if len(cached) != n || len(want) != n {
		t.Fatalf("cached %d Widgets, the apiserver has %d; want %d", len(cached), len(want), n)
	}
	for _, o := range cached {
		got, ok := o.(*Compact)
		if !ok {
			t.Fatalf("cached a %T", o)
		}
		if w := want[got.Name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s cached as\n%s\n%+v\nwant\n%s\n%+v", got.Name, got.RawJSON(), got.ObjectMeta, w.RawJSON(), w.ObjectMeta)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// On a real apiserver, a Source WithCompactTyped caches ConfigMaps and
// Secrets (typed, from protobuf) as Compact objects holding the JSON the
// encoder writes for the typed object, trimmed and redacted; so does a
// shard's Source (ownedInformer); and they follow live changes.
func TestCompactTypedOnTheAPIServer(t *testing.T) {
	env := testenv.Get(t)
	c := env.Clients(t)
	ctx := context.Background()
	const ns = "compact-typed"
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, data := range []map[string]string{{"a": "<b> & é"}, {"b": "x"}, nil} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"i": strconv.Itoa(i)},
			Annotations: map[string]string{LastAppliedAnnotation: "{}", "note": "kept"}}, Data: data}
		if _, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	if _, err := c.Kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	trims := TransformOptions{StripManagedFields: true, StripLastApplied: true, RedactSecrets: true}
	clients := Clients{Config: c.REST, Typed: c.Kube, Dynamic: c.Dynamic}
	configMaps := &Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	secrets := &Resource{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Namespaced: true}
	// want is what the encoder writes for the apiserver's typed objects,
	// trimmed: each object's name to its JSON.
	want := func(res *Resource) map[string]string {
		t.Helper()
		var objs []runtime.Object
		switch res {
		case configMaps:
			list, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		case secrets:
			list, err := c.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		}
		out := map[string]string{}
		for _, o := range objs {
			o, _ := trims.Transform()(o)
			var buf bytes.Buffer
			if err := AppendObjectJSON(&buf, o.(runtime.Object), "v1", res.Kind); err != nil {
				t.Fatal(err)
			}
			m, _ := meta.Accessor(o)
			out[m.GetName()] = buf.String()
		}
		return out
	}
	// cached is s's objects, each name to its JSON, once every one is a
	// Compact whose metadata is the JSON's.
	cached := func(s *Source) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, o := range s.List() {
			cp, ok := o.(*Compact)
			if !ok {
				t.Fatalf("cached a %T", o)
			}
			u, err := cp.Unstructured()
			if err != nil {
				t.Fatal(err)
			}
			if u.GetName() != cp.Name || u.GetResourceVersion() != cp.ResourceVersion || string(u.GetUID()) != string(cp.UID) || !reflect.DeepEqual(u.GetLabels(), cp.Labels) {
				t.Errorf("%s: metadata %+v, JSON %s", cp.Name, cp.ObjectMeta, cp.RawJSON())
			}
			out[cp.Name] = cp.RawJSON()
		}
		return out
	}
	for _, res := range []*Resource{configMaps, secrets} {
		plain := startSource(t, clients, res, Scope{Namespaces: []string{ns}}, trims.Transform(), &recordQueue{}, WithCompactDecoding(trims), WithCompactTyped())
		sharded := startSource(t, clients, res, Scope{}, trims.Transform(), &recordQueue{}, WithCompactDecoding(trims), WithCompactTyped(),
			WithOwns(func(namespace, _ string) bool { return namespace == ns }))
		for name, s := range map[string]*Source{"plain": plain, "sharded": sharded} {
			if got, w := cached(s), want(res); !reflect.DeepEqual(got, w) {
				t.Errorf("%s %s: cached\n%v\nwant\n%v", name, res, got, w)
			}
		}
		if res == secrets {
			for _, j := range cached(plain) {
				if strings.Contains(j, "hunter2") || strings.Contains(j, base64.StdEncoding.EncodeToString([]byte("hunter2"))) {
					t.Errorf("a Secret's value is cached: %s", j)
				}
			}
			continue
		}
		// A live change.
		cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["b"] = "changed"
		if _, err := c.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		w := want(res)
		for name, s := range map[string]*Source{"plain": plain, "sharded": sharded} {
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
				return reflect.DeepEqual(cached(s), w), nil
			}); err != nil {
				t.Errorf("%s: the cache never had the update: %v", name, cached(s))
			}
		}
	}
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/manifests"
	"github.com/kubebridge/kubebridge/internal/natsconf"
	"github.com/kubebridge/kubebridge/internal/recorder"
)

// deployModuleRoot is the directory of the go.mod above the test's working
// directory.
func deployModuleRoot(t *testing.T) string {
	t.Helper()
	dir, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// moduleRoot is deployModuleRoot for code without a test.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// deployCheckTable fails for every kustomization on disk that
// deployKustomizations does not list, and for every listed one not on disk.
func deployCheckTable(t *testing.T, kdir string) {
	t.Helper()
	dirs, err := manifests.Find(kdir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range dirs {
		rel, err := filepath.Rel(kdir, d)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, filepath.ToSlash(rel))
	}
	for _, f := range found {
		if !slices.ContainsFunc(deployKustomizations, func(k deployCase) bool { return k.dir == f }) {
			t.Errorf("deploy/kustomize/%s is not in deployKustomizations: add it, with its namespace and RBAC scope", f)
		}
	}
	for _, k := range deployKustomizations {
		if !slices.Contains(found, k.dir) {
			t.Errorf("deployKustomizations has %s, which is not a kustomization under deploy/kustomize", k.dir)
		}
	}
}

// deployRender builds dir with krusty and returns its objects.
func deployRender(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	built, err := manifests.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, data := range built.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	return objs
}

// deployRewrite moves objs to namespace ns: namespaced objects and the
// Namespace object (all of which must be in renderedNS), and subjects of
// bindings in renderedNS. Other cluster-scoped objects get suffix, and role
// refs to renamed ClusterRoles follow. It returns each object's mapping.
func deployRewrite(t *testing.T, mapper apimeta.RESTMapper, objs []*unstructured.Unstructured, renderedNS, ns, suffix string) []*apimeta.RESTMapping {
	t.Helper()
	mappings := make([]*apimeta.RESTMapping, len(objs))
	renamed := map[string]string{} // ClusterRole name → new name
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: the apiserver does not serve it: %v", gvk, o.GetName(), err)
		}
		mappings[i] = m
		switch {
		case m.Scope.Name() == apimeta.RESTScopeNameNamespace:
			if o.GetNamespace() != renderedNS {
				t.Errorf("%s %s/%s: rendered into namespace %q, want %q", gvk.Kind, o.GetNamespace(), o.GetName(), o.GetNamespace(), renderedNS)
			}
			o.SetNamespace(ns)
		case gvk.Kind == "Namespace" && gvk.Group == "":
			if o.GetName() != renderedNS {
				t.Errorf("Namespace %s: want only the kustomization's own namespace %s", o.GetName(), renderedNS)
			}
			o.SetName(ns)
		default:
			if gvk.Kind == "ClusterRole" && gvk.Group == rbacv1.GroupName {
				renamed[o.GetName()] = o.GetName() + suffix
			}
			o.SetName(o.GetName() + suffix)
		}
	}
	for _, o := range objs {
		if o.GroupVersionKind().Group != rbacv1.GroupName || (o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding") {
			continue
		}
		if kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); kind == "ClusterRole" {
			name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			if n, ok := renamed[name]; ok {
				if err := unstructured.SetNestedField(o.Object, n, "roleRef", "name"); err != nil {
					t.Fatal(err)
				}
			}
		}
		subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
		if err != nil {
			t.Fatalf("%s %s: subjects: %v", o.GetKind(), o.GetName(), err)
		}
		for _, s := range subjects {
			if s, ok := s.(map[string]any); ok && s["kind"] == rbacv1.ServiceAccountKind && s["namespace"] == renderedNS {
				s["namespace"] = ns
			}
		}
		if subjects != nil {
			if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return mappings
}

// deployDryRun: kinds that only controllers make anything of; they are
// applied with dryRun=All.
func deployDryRun(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod", "ReplicationController":
		return true
	}
	return false
}

// deployOrder is the order of applying: what others refer to first.
func deployOrder(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	case "ServiceAccount":
		return 2
	case "ClusterRole", "Role":
		return 3
	case "ClusterRoleBinding", "RoleBinding":
		return 4
	case "ConfigMap", "Secret":
		return 5
	case "Service":
		return 6
	}
	if deployDryRun(kind) {
		return 8
	}
	return 7
}

// deployWarnings collects the apiserver's warnings (e.g. Pod Security).
type deployWarnings struct{ recorder.Log[string] }

func (w *deployWarnings) HandleWarningHeader(code int, agent, text string) {
	if code != 299 || text == "" {
		return
	}
	w.Append(text)
}

func (w *deployWarnings) take() []string { return w.Take() }

// deployApply applies objs with server-side apply, as the admin; kinds
// for which dryRun is true with dryRun=All (see deployDryRun). Every apply
// must succeed without warnings.
func deployApply(ctx context.Context, t *testing.T, rc *rest.Config, objs []*unstructured.Unstructured, mappings []*apimeta.RESTMapping, dryRun func(kind string) bool) {
	t.Helper()
	warnings := &deployWarnings{}
	rc = rest.CopyConfig(rc)
	rc.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return deployOrder(objs[order[a]].GetKind()) < deployOrder(objs[order[b]].GetKind())
	})
	force := true
	for _, i := range order {
		o, m := objs[i], mappings[i]
		what := o.GetKind() + " " + o.GetName()
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == apimeta.RESTScopeNameNamespace {
			what = o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		opts := metav1.PatchOptions{FieldManager: deployFieldManager, Force: &force}
		mode := "applied"
		if dryRun(o.GetKind()) {
			opts.DryRun = []string{metav1.DryRunAll}
			mode = "applied (dryRun=All)"
		}
		warnings.take()
		got, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
		if err != nil {
			t.Errorf("%s: server-side apply: %v", what, err)
			continue
		}
		for _, w := range warnings.take() {
			t.Errorf("%s: the apiserver warns: %s", what, w)
		}
		if got.GetUID() == "" || got.GetName() != o.GetName() {
			t.Errorf("%s: apply returned %s %q (uid %q)", what, got.GetKind(), got.GetName(), got.GetUID())
		}
		switch {
		case dryRun(o.GetKind()):
			// Validated and admitted, but not stored.
			if _, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: after a dry-run apply, get returns %v, want NotFound", what, err)
			}
		case o.GetKind() == "Service" && o.GroupVersionKind().Group == "":
			ip, _, _ := unstructured.NestedString(got.Object, "spec", "clusterIP")
			want, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
			if ip == "" || (want != "" && ip != want) {
				t.Errorf("%s: spec.clusterIP %q after apply (rendered %q)", what, ip, want)
			}
			what += " (clusterIP " + ip + ")"
		}
		t.Logf("%s %s", mode, what)
	}
}

// deployBridgeConfig finds the bridge's Deployment in objs and loads its
// settings the way the bridge would in its pod (envFrom ConfigMaps, then
// env; the namespace field ref is ns). It returns its ServiceAccount.
// deployWorkload is the bridge's workload: a Deployment, or (sharded) a
// StatefulSet whose pods' ordinals give their shards.
type deployWorkload struct {
	metav1.ObjectMeta
	template corev1.PodTemplateSpec
	// podNames are the names its pods get: a StatefulSet's by ordinal,
	// else one a Deployment's could.
	podNames []string
}

func deployWorkloadOf(t *testing.T, o *unstructured.Unstructured) (deployWorkload, bool) {
	t.Helper()
	if o.GroupVersionKind().Group != "apps" {
		return deployWorkload{}, false
	}
	switch o.GetKind() {
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			t.Fatalf("Deployment %s: %v", o.GetName(), err)
		}
		return deployWorkload{ObjectMeta: d.ObjectMeta, template: d.Spec.Template, podNames: []string{d.Name + "-7c9f8d6b5-xk4qz"}}, true
	case "StatefulSet":
		s := &appsv1.StatefulSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
			t.Fatalf("StatefulSet %s: %v", o.GetName(), err)
		}
		w := deployWorkload{ObjectMeta: s.ObjectMeta, template: s.Spec.Template}
		replicas := int32(1)
		if s.Spec.Replicas != nil {
			replicas = *s.Spec.Replicas
		}
		for i := range replicas {
			w.podNames = append(w.podNames, fmt.Sprintf("%s-%d", s.Name, i))
		}
		return w, true
	}
	return deployWorkload{}, false
}

// deployBridgeEnv finds the bridge's workload and container in objs and
// returns the environment its first pod gets (envFrom ConfigMaps, then
// env; the namespace field ref is ns).
func deployBridgeEnv(t *testing.T, objs []*unstructured.Unstructured, ns string) (deployWorkload, *corev1.Container, map[string]string) {
	t.Helper()
	var bridges []deployWorkload
	var containers []corev1.Container
	for _, o := range objs {
		w, ok := deployWorkloadOf(t, o)
		if !ok {
			continue
		}
		for _, c := range w.template.Spec.Containers {
			if c.Image == deployBridgeImage || strings.HasPrefix(c.Image, deployBridgeImage+":") || strings.HasPrefix(c.Image, deployBridgeImage+"@") {
				bridges = append(bridges, w)
				containers = append(containers, c)
			}
		}
	}
	if len(bridges) != 1 {
		t.Fatalf("%d bridge containers (image %s) in the output, want 1", len(bridges), deployBridgeImage)
	}
	d, c := bridges[0], containers[0]
	configMaps := map[string]map[string]string{}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GroupVersionKind().Group == "" && o.GetNamespace() == d.Namespace {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			configMaps[o.GetName()] = data
		}
	}
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		data, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			if from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional {
				t.Fatalf("the bridge's envFrom ConfigMap %s is not in the output", from.ConfigMapRef.Name)
			}
			continue
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = ns
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = d.podNames[0]
		}
	}
	return d, &c, env
}

// deployBridgeConfig returns the identity the bridge runs as, its settings
// (of its first pod), and the Leases its pods elect their leaders on (one
// per shard). The files of the Secrets it mounts are those
// hack/nats-certs.sh writes.
func deployBridgeConfig(t *testing.T, objs []*unstructured.Unstructured, ns string) (deployIdentity, *config.Config, []string) {
	t.Helper()
	d, c, env := deployBridgeEnv(t, objs, ns)
	env = natsconf.LocalizeEnv(t, &d.template.Spec, c, natsCerts(t), env)
	if env["BRIDGE_RESOURCES"] == "" {
		t.Fatalf("the bridge has no BRIDGE_RESOURCES")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := deployMountedFiles(d.template.Spec, *c, objs, d.Namespace)
	var cfg *config.Config
	var leases []string
	for _, pod := range d.podNames {
		if _, ok := env["POD_NAME"]; ok {
			env["POD_NAME"] = pod
		}
		c, err := config.Load(ctx, envconfig.MapLookuper(env), config.WithReadFile(read))
		if err != nil {
			t.Fatalf("the bridge's settings do not load (pod %s): %v", pod, err)
		}
		if cfg == nil {
			cfg = c
		}
		if c.LeaderElection && !slices.Contains(leases, c.LeaseName) {
			leases = append(leases, c.LeaseName)
		}
	}
	sa := d.template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ServiceAccount" && o.GetNamespace() == d.Namespace && o.GetName() == sa
	}) {
		t.Errorf("the bridge runs as ServiceAccount %s/%s, which is not in the output", d.Namespace, sa)
	}
	t.Logf("the bridge runs as ServiceAccount %s/%s: BRIDGE_RESOURCES=%q, BRIDGE_NAMESPACES=%q", d.Namespace, sa, env["BRIDGE_RESOURCES"], env["BRIDGE_NAMESPACES"])
	return deployServiceAccount(d.Namespace, sa), cfg, leases
}

// deployCleanup deletes, when the test ends, every object of objs that was
// stored (not applied with dryRun), then namespace ns, which without a
// controller-manager stays Terminating. Services hold cluster IPs of a
// small range, so they must not be left behind.
func deployCleanup(t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface, objs []*unstructured.Unstructured, mappings []*apimeta.RESTMapping, ns string, dryRun func(kind string) bool) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(objs) - 1; i >= 0; i-- {
			o, m := objs[i], mappings[i]
			if dryRun(o.GetKind()) || (o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "") {
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == apimeta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: delete %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: delete namespace %s: %v", ns, err)
		}
	})
}

// deployMountedFiles reads files as container c of a pod with spec sees
// them: the keys of the ConfigMaps of objs (in namespace ns) it mounts, at
// their mount paths (the bridge's configuration file, BRIDGE_CONFIG).
func deployMountedFiles(spec corev1.PodSpec, c corev1.Container, objs []*unstructured.Unstructured, ns string) func(string) ([]byte, error) {
	files := map[string]string{}
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			for _, o := range objs {
				if o.GetKind() == "ConfigMap" && o.GroupVersionKind().Group == "" && o.GetNamespace() == ns && o.GetName() == v.ConfigMap.Name {
					data, _, _ := unstructured.NestedStringMap(o.Object, "data")
					for k, d := range data {
						files[path.Join(m.MountPath, k)] = d
					}
				}
			}
		}
	}
	return func(name string) ([]byte, error) {
		d, ok := files[path.Clean(name)]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return []byte(d), nil
	}
}

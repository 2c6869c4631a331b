package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestGetOutputs checks get's other outputs against the apiserver: -o json
// and yaml (a List, or the object asked for by name), -o name, names not
// found, an empty namespace, a cluster-scoped type, --full-replay; and
// the ways to name the connection: flags, a selected nats context, an
// explicit one.
func TestGetOutputs(t *testing.T) {
	h := newHarness(t)
	ns, empty := h.namespace(), h.namespace()
	ctx := context.Background()
	for _, name := range []string{"b", "a", "c"} {
		h.createConfigMap(ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"n": name}}, Data: map[string]string{"name": name}})
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	if _, err := h.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.runBridge("configmaps; deployments.apps; namespaces", ns, empty)

	listed, err := h.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, cm := range listed.Items {
		want = append(want, cm.Name+" "+string(cm.UID)+" "+cm.ResourceVersion+" "+cm.Data["name"])
	}

	// -o json and -o yaml: a List of the objects, apiVersion and kind set.
	for _, format := range []string{"json", "yaml"} {
		res := h.run("get", "configmaps", "-n", ns, "-o", format)
		var list map[string]any
		if err := yaml.Unmarshal([]byte(res.stdout), &list); err != nil || res.code != 0 {
			t.Fatalf("-o %s: %v\n%s", format, err, res)
		}
		if list["kind"] != "List" || list["apiVersion"] != "v1" {
			t.Errorf("-o %s: kind %v apiVersion %v, want a v1 List", format, list["kind"], list["apiVersion"])
		}
		var got []string
		for _, it := range list["items"].([]any) {
			u := unstructured.Unstructured{Object: it.(map[string]any)}
			if u.GetKind() != "ConfigMap" || u.GetAPIVersion() != "v1" {
				t.Errorf("-o %s: item %s is %s %s", format, u.GetName(), u.GetAPIVersion(), u.GetKind())
			}
			data, _, _ := unstructured.NestedString(u.Object, "data", "name")
			got = append(got, u.GetName()+" "+string(u.GetUID())+" "+u.GetResourceVersion()+" "+data)
		}
		if !slices.Equal(got, want) {
			t.Errorf("-o %s lists %q, the apiserver %q", format, got, want)
		}
	}
	if res := h.run("get", "configmaps", "-n", ns, "-o", "json"); !strings.HasPrefix(res.stdout, "{\n    \"apiVersion\": \"v1\",") {
		t.Errorf("-o json is not indented as kubectl's:\n%s", res.stdout)
	}

	// One object by name: the object itself.
	res := h.run("get", "deploy", "web", "-n", ns, "-oyaml")
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(res.stdout), &dep); err != nil || res.code != 0 {
		t.Fatalf("get deploy web -o yaml: %v\n%s", err, res)
	}
	if dep.Kind != "Deployment" || dep.APIVersion != "apps/v1" || dep.Name != "web" || *dep.Spec.Replicas != 3 {
		t.Errorf("get deploy web -o yaml: %s %s %s replicas %d", dep.APIVersion, dep.Kind, dep.Name, *dep.Spec.Replicas)
	}

	// -o name, as kubectl prints it.
	if res := h.run("get", "configmap", "-n", ns, "-o", "name"); res.stdout != "configmap/a\nconfigmap/b\nconfigmap/c\n" {
		t.Errorf("get configmap -o name: %s", res)
	}
	if res := h.run("get", "deployments.apps", "-n", ns, "-o", "name"); res.stdout != "deployment.apps/web\n" {
		t.Errorf("get deployments.apps -o name: %s", res)
	}

	// Names: found ones are printed, missing ones reported, exit 1.
	res = h.run("get", "cm", "c", "nope", "a", "-n", ns, "--no-headers")
	if res.code != 1 || len(parseTable(t, "X\n"+res.stdout).rows) != 2 || !strings.HasPrefix(res.stdout, "a ") ||
		res.stderr != "Error from stream (NotFound): configmaps \"nope\" not found\n" {
		t.Errorf("get cm c nope a: %s", res)
	}

	// An empty namespace, as kubectl says it.
	if res := h.run("get", "configmaps", "-n", empty); res.code != 0 || res.stdout != "" || res.stderr != "No resources found in "+empty+" namespace.\n" {
		t.Errorf("get configmaps in an empty namespace: %s", res)
	}
	if res := h.run("get", "configmaps", "-n", empty, "-o", "json"); !strings.Contains(res.stdout, `"items": []`) {
		t.Errorf("get configmaps -o json in an empty namespace: %s", res)
	}

	// Namespaces are cluster-scoped: -n does not narrow them, and the
	// table is the apiserver's.
	h.checkGet(h.apiTable(h.cs.CoreV1().RESTClient(), "/api/v1", "namespaces", nil, false, false), "get", "ns", "-n", ns)

	// --full-replay rebuilds the same state another way.
	a, b := h.run("get", "cm", "-n", ns, "-o", "json"), h.run("get", "cm", "-n", ns, "-o", "json", "--full-replay")
	if a.stdout != b.stdout || a.code != 0 || b.code != 0 {
		t.Errorf("--full-replay differs:\n%s\n%s", a, b)
	}

	// The connection named by flags, without any variable.
	flags := []string{"-s", h.env.NATSURL(), "--stream", h.stream, "--prefix", h.prefix, "--cluster", cluster}
	bare := func(args ...string) result {
		home := t.TempDir()
		return h.runEnv(map[string]string{"HOME": home}, args...)
	}
	if res := bare(append([]string{"get", "cm", "-n", ns, "-o", "name"}, flags...)...); res.stdout != "configmap/a\nconfigmap/b\nconfigmap/c\n" {
		t.Errorf("get with connection flags: %s", res)
	}
	// Flags before the command, as the nats CLI allows.
	if res := bare(append(flags, "get", "cm", "-n", ns, "-o", "name")...); res.stdout != "configmap/a\nconfigmap/b\nconfigmap/c\n" {
		t.Errorf("connection flags before the command: %s", res)
	}
	// No server anywhere: the default URL, where nothing listens here.
	if res := bare("get", "cm", "--stream", h.stream, "-s", "nats://127.0.0.1:1"); res.code != 1 || !strings.Contains(res.stderr, "connect to NATS nats://127.0.0.1:1") {
		t.Errorf("get against no server: %s", res)
	}

	// A nats context, selected with `nats context select` or named.
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "nats")
	writeFile(t, filepath.Join(dir, "context", "bridge.json"), `{"description": "test", "url": "`+h.env.NATSURL()+`"}`)
	writeFile(t, filepath.Join(dir, "context", "nowhere.json"), `{"url": "nats://127.0.0.1:1"}`)
	vars := map[string]string{"HOME": home, "BRIDGE_STREAM_NAME": h.stream, "BRIDGE_SUBJECT_PREFIX": h.prefix, "BRIDGE_CLUSTER_NAME": cluster}
	if res := h.runEnv(vars, "get", "cm", "-n", ns, "-o", "name", "--context", "bridge"); res.stdout != "configmap/a\nconfigmap/b\nconfigmap/c\n" {
		t.Errorf("--context bridge: %s", res)
	}
	writeFile(t, filepath.Join(dir, "context.txt"), "bridge\n")
	if res := h.runEnv(vars, "get", "cm", "-n", ns, "-o", "name"); res.stdout != "configmap/a\nconfigmap/b\nconfigmap/c\n" {
		t.Errorf("selected context: %s", res)
	}
	if res := h.runEnv(vars, "get", "cm", "-n", ns, "--context", "nowhere"); res.code != 1 || !strings.Contains(res.stderr, "nats://127.0.0.1:1") {
		t.Errorf("--context nowhere: %s", res)
	}
	if res := h.runEnv(vars, "get", "cm", "-n", ns, "--context", "missing"); res.code != 1 || !strings.Contains(res.stderr, `nats context "missing"`) {
		t.Errorf("--context missing: %s", res)
	}
	// -s wins over the context.
	if res := h.runEnv(vars, "get", "cm", "-n", ns, "-o", "name", "--context", "nowhere", "-s", h.env.NATSURL()); res.code != 0 {
		t.Errorf("-s over --context: %s", res)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runEnv runs the CLI with exactly these variables.
func (h *harness) runEnv(vars map[string]string, args ...string) result {
	h.t.Helper()
	var stdout, stderr strings.Builder
	code := cliRun(vars, args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

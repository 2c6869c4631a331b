// Package kustomize_test builds every kustomization under deploy/kustomize
// in-process, as `kustomize build` (or `kubectl apply -k`) would, and checks
// what comes out: each object decodes strictly into its Go type, the
// bridge's settings are variables internal/config reads and load without
// error, the pods are locked down, and the RBAC grants exactly what
// BRIDGE_RESOURCES needs.
//
// To see what a kustomization renders (there is no kustomize binary needed):
//
//	go test ./deploy/kustomize -run TestBuild -args -out /tmp/rendered
//
// writes /tmp/rendered/<kustomization>.yaml, e.g. overlays-with-nats.yaml.
package kustomize_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/manifests"
)

var outDir = flag.String("out", "", "write the YAML each kustomization renders to `DIR`/<kustomization>.yaml")

const (
	bridgeImage = "ghcr.io/kubebridge/kubebridge"
	// NATS_URL used for config.Load when a kustomization leaves it unset.
	defaultNATSURL = "nats://nats:4222"
)

// want is what each shipped kustomization must render, beyond the checks
// that apply to all of them. A kustomization found on disk but not listed
// here gets the generic checks only.
var want = map[string]struct {
	namespace   string
	clusterRBAC bool     // may hold ClusterRoles and ClusterRoleBindings
	watch       []string // BRIDGE_NAMESPACES; nil: all namespaces
	resources   []string // the names in BRIDGE_RESOURCES, in order
	nats        bool     // brings its own NATS server, the target of NATS_URL
}{
	"base":                 {namespace: "kubebridge", clusterRBAC: true, resources: []string{"configmaps", "services", "deployments.apps"}},
	"overlays/namespaced":  {namespace: "apps", watch: []string{"apps"}, resources: []string{"configmaps", "services", "deployments.apps"}},
	"overlays/with-nats":   {namespace: "kubebridge", clusterRBAC: true, resources: []string{"configmaps", "services", "deployments.apps"}, nats: true},
	"overlays/example-crd": {namespace: "kubebridge", clusterRBAC: true, resources: []string{"configmaps", "services", "deployments.apps", "widgets.example.com"}},
	"overlays/sharded":     {namespace: "kubebridge", clusterRBAC: true, resources: []string{"configmaps", "services", "deployments.apps"}},
}

// object is one rendered object, decoded into its Go type.
type object struct {
	gvk schema.GroupVersionKind
	obj runtime.Object
	m   metav1.Object
}

func (o object) String() string {
	if ns := o.m.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", o.gvk.Kind, ns, o.m.GetName())
	}
	return fmt.Sprintf("%s %s", o.gvk.Kind, o.m.GetName())
}

// build is the output of one kustomization.
type build struct {
	name    string // directory relative to deploy/kustomize, slash-separated
	yaml    []byte
	objects []object
	err     error
}

var (
	buildsOnce sync.Once
	allBuilds  []*build
	findErr    error
)

// builds renders every kustomization once per test binary.
func builds(t *testing.T) []*build {
	t.Helper()
	buildsOnce.Do(func() {
		var dirs []string
		dirs, findErr = manifests.Find(".")
		for _, d := range dirs {
			allBuilds = append(allBuilds, render(d))
		}
	})
	if findErr != nil {
		t.Fatal(findErr)
	}
	return allBuilds
}

// okBuilds are the builds that rendered; TestBuild reports the others.
func okBuilds(t *testing.T) []*build {
	t.Helper()
	var out []*build
	for _, b := range builds(t) {
		if b.err != nil {
			t.Logf("%s: skipped: does not build (TestBuild fails)", b.name)
			continue
		}
		out = append(out, b)
	}
	return out
}

// render runs kustomize on dir and decodes every object strictly: unknown
// or duplicate fields and kinds the client-go scheme does not know fail.
func render(dir string) *build {
	b := &build{name: filepath.ToSlash(dir)}
	abs, err := filepath.Abs(dir)
	if err != nil {
		b.err = err
		return b
	}
	built, err := manifests.Build(abs)
	if err != nil {
		b.err = err
		return b
	}
	b.yaml = built.YAML
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var problems []string
	for _, data := range built.Objects {
		obj, gvk, err := decoder.Decode(data, nil, nil)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", objectID(data), err))
			continue
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", objectID(data), err))
			continue
		}
		b.objects = append(b.objects, object{gvk: *gvk, obj: obj, m: m})
	}
	if len(problems) > 0 {
		b.err = fmt.Errorf("strict decoding:\n  %s", strings.Join(problems, "\n  "))
	}
	return b
}

func ofType[T runtime.Object](b *build) []T {
	var out []T
	for _, o := range b.objects {
		if x, ok := o.obj.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestBuild builds every kustomization and lists what it renders.
func TestBuild(t *testing.T) {
	bs := builds(t)
	found := map[string]bool{}
	for _, b := range bs {
		found[b.name] = true
		t.Run(b.name, func(t *testing.T) {
			if b.err != nil {
				t.Fatal(b.err)
			}
			if len(b.objects) == 0 {
				t.Fatal("renders no objects")
			}
			var list []string
			for _, o := range b.objects {
				list = append(list, o.String())
			}
			t.Logf("%d objects:\n  %s", len(list), strings.Join(list, "\n  "))
			if *outDir != "" {
				if err := os.MkdirAll(*outDir, 0o755); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(*outDir, strings.ReplaceAll(b.name, "/", "-")+".yaml")
				if err := os.WriteFile(file, b.yaml, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", file)
			}
		})
	}
	for name := range want {
		if !found[name] {
			t.Errorf("kustomization %s is missing", name)
		}
	}
}

// TestNamespaces: every namespaced object lands in the kustomization's
// namespace.
func TestNamespaces(t *testing.T) {
	for _, b := range okBuilds(t) {
		exp, known := want[b.name]
		for _, o := range b.objects {
			ns := o.m.GetNamespace()
			switch {
			case clusterScopedKinds[o.gvk.Kind]:
				if ns != "" {
					t.Errorf("%s: cluster-scoped %s has a namespace", b.name, o)
				}
			case ns == "":
				t.Errorf("%s: %s has no namespace", b.name, o)
			case known && ns != exp.namespace:
				t.Errorf("%s: %s is not in namespace %s", b.name, o, exp.namespace)
			}
		}
		if known {
			for _, n := range ofType[*corev1.Namespace](b) {
				if n.Name != exp.namespace {
					t.Errorf("%s: creates namespace %s, deploys into %s", b.name, n.Name, exp.namespace)
				}
			}
		}
	}
}

var clusterScopedKinds = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "PersistentVolume": true,
	"StorageClass": true, "PriorityClass": true, "ValidatingWebhookConfiguration": true,
	"MutatingWebhookConfiguration": true, "CustomResourceDefinition": true, "Node": true,
}

// configVariables are the variables config.Config reads, from its env tags.
func configVariables(t *testing.T) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	typ := reflect.TypeOf(config.Config{})
	for i := range typ.NumField() {
		tag, ok := typ.Field(i).Tag.Lookup("env")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		vars[strings.TrimSpace(name)] = true
	}
	if !vars["BRIDGE_RESOURCES"] || !vars["NATS_URL"] || len(vars) < 20 {
		t.Fatalf("config.Config's env tags give %d variables, without BRIDGE_RESOURCES or NATS_URL: has Config changed shape?", len(vars))
	}
	return vars
}

var bridgeVarRE = regexp.MustCompile(`^(BRIDGE|NATS)_`)

// bridgeContainer is the bridge's container in a build, with its pod.
type bridgeContainer struct {
	workload  string // e.g. Deployment kubebridge/kubebridge
	obj       runtime.Object
	namespace string
	pod       *corev1.PodTemplateSpec
	container *corev1.Container
	grace     int64
}

// podName is the name of one of the workload's pods: a StatefulSet's pod
// of ordinal, or a name a Deployment's ReplicaSet could give.
func (bc bridgeContainer) podName(ordinal int) string {
	m, err := meta.Accessor(bc.obj)
	if err != nil {
		return "pod"
	}
	if _, ok := bc.obj.(*appsv1.StatefulSet); ok {
		return fmt.Sprintf("%s-%d", m.GetName(), ordinal)
	}
	return m.GetName() + "-7c9f8d6b5-xk4qz"
}

// runsBridge reports whether a pod template runs the bridge's image.
func runsBridge(pod *corev1.PodTemplateSpec) bool {
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return isBridgeImage(c.Image) })
}

func isBridgeImage(image string) bool {
	return image == bridgeImage || strings.HasPrefix(image, bridgeImage+":") || strings.HasPrefix(image, bridgeImage+"@")
}

func bridgeOf(t *testing.T, b *build) bridgeContainer {
	t.Helper()
	var found []bridgeContainer
	for _, o := range b.objects {
		pod := podTemplate(o.obj)
		if pod == nil {
			continue
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if isBridgeImage(c.Image) {
				grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
				if pod.Spec.TerminationGracePeriodSeconds != nil {
					grace = *pod.Spec.TerminationGracePeriodSeconds
				}
				found = append(found, bridgeContainer{workload: o.String(), obj: o.obj, namespace: o.m.GetNamespace(), pod: pod, container: c, grace: grace})
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d containers run %s, want 1", b.name, len(found), bridgeImage)
	}
	return found[0]
}

// environment resolves the bridge container's environment as the kubelet
// would, from the rendered objects: envFrom ConfigMaps, then env. Optional
// references to absent Secrets are unset; other Secret values are
// placeholders. sources names where each variable came from.
func environment(t *testing.T, b *build, bc bridgeContainer) (env, sources map[string]string) {
	t.Helper()
	env, sources = map[string]string{}, map[string]string{}
	configMaps := map[string]*corev1.ConfigMap{}
	for _, cm := range ofType[*corev1.ConfigMap](b) {
		if cm.Namespace == bc.namespace {
			configMaps[cm.Name] = cm
		}
	}
	secrets := map[string]bool{}
	for _, s := range ofType[*corev1.Secret](b) {
		if s.Namespace == bc.namespace {
			secrets[s.Name] = true
		}
	}
	c := bc.container
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm := configMaps[from.ConfigMapRef.Name]
			if cm == nil {
				if from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional {
					t.Errorf("%s: envFrom ConfigMap %q is not in the output", b.name, from.ConfigMapRef.Name)
				}
				continue
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
				sources[from.Prefix+k] = "ConfigMap " + cm.Name
			}
		case from.SecretRef != nil:
			t.Logf("%s: envFrom Secret %q: its keys cannot be checked", b.name, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		sources[e.Name] = "env of container " + c.Name
		switch vf := e.ValueFrom; {
		case vf == nil:
			env[e.Name] = e.Value
		case vf.FieldRef != nil:
			switch vf.FieldRef.FieldPath {
			case "metadata.namespace":
				env[e.Name] = bc.namespace
			case "metadata.name":
				env[e.Name] = bc.podName(0)
			default:
				env[e.Name] = "fieldref-" + vf.FieldRef.FieldPath
			}
		case vf.ConfigMapKeyRef != nil:
			cm := configMaps[vf.ConfigMapKeyRef.Name]
			v, ok := "", false
			if cm != nil {
				v, ok = cm.Data[vf.ConfigMapKeyRef.Key]
			}
			if !ok && (vf.ConfigMapKeyRef.Optional == nil || !*vf.ConfigMapKeyRef.Optional) {
				t.Errorf("%s: %s: ConfigMap key %s/%s is not in the output", b.name, e.Name, vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key)
			}
			if ok {
				env[e.Name] = v
			} else {
				delete(env, e.Name)
			}
		case vf.SecretKeyRef != nil:
			optional := vf.SecretKeyRef.Optional != nil && *vf.SecretKeyRef.Optional
			if !optional || secrets[vf.SecretKeyRef.Name] {
				env[e.Name] = "secret-" + vf.SecretKeyRef.Name + "-" + vf.SecretKeyRef.Key
			} else {
				delete(env, e.Name) // the Secret is optional and not shipped
			}
		case vf.ResourceFieldRef != nil:
			env[e.Name] = "1"
		}
	}
	return env, sources
}

// TestBridgeSettings: every BRIDGE_*/NATS_* variable the bridge gets is one
// config.Config reads, and the settings load.
func TestBridgeSettings(t *testing.T) {
	vars := configVariables(t)
	for _, b := range okBuilds(t) {
		t.Run(b.name, func(t *testing.T) {
			// Every BRIDGE_/NATS_ key of every ConfigMap and container.
			for _, cm := range ofType[*corev1.ConfigMap](b) {
				for k, v := range cm.Data {
					if !bridgeVarRE.MatchString(k) {
						continue
					}
					if !vars[k] {
						t.Errorf("ConfigMap %s: %s is not a variable the bridge reads (see internal/config)", cm.Name, k)
					}
					// Env files are taken literally: quotes and spaces stay.
					if strings.TrimSpace(v) != v || strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "'") || strings.HasSuffix(v, `"`) || strings.HasSuffix(v, "'") {
						t.Errorf("ConfigMap %s: %s=%q: leading or trailing spaces or quotes end up in the value", cm.Name, k, v)
					}
				}
			}
			for _, o := range b.objects {
				if pod := podTemplate(o.obj); pod != nil {
					for _, c := range allContainers(&pod.Spec) {
						for _, e := range c.Env {
							if bridgeVarRE.MatchString(e.Name) && !vars[e.Name] {
								t.Errorf("%s: container %s: %s is not a variable the bridge reads (see internal/config)", o, c.Name, e.Name)
							}
						}
					}
				}
			}

			bc := bridgeOf(t, b)
			env, sources := environment(t, b, bc)
			for k := range env {
				// ConfigMap keys are reported above.
				if bridgeVarRE.MatchString(k) && !vars[k] && !strings.HasPrefix(sources[k], "ConfigMap ") {
					t.Errorf("%s (from %s) is not a variable the bridge reads (see internal/config)", k, sources[k])
				}
			}
			if env["NATS_URL"] == "" {
				t.Errorf("NATS_URL is not set: the bridge would start an embedded NATS server, which needs a writable file system")
				env["NATS_URL"] = defaultNATSURL
			}
			cfg, err := loadBridgeConfig(t, b, bc, env)
			if err != nil {
				t.Fatalf("config.Load rejects the settings:\n%v\nenvironment: %v", err, env)
			}
			checkBridgeConfig(t, b, bc, cfg)
		})
	}
}

// bridgeConfig loads bc's environment in b as the bridge would, and its
// configuration file from the ConfigMap mounted, with NATS_URL defaulted
// (TestBridgeSettings reports it missing), and returns it with the
// environment.
func bridgeConfig(t *testing.T, b *build, bc bridgeContainer) (*config.Config, map[string]string) {
	t.Helper()
	env, _ := environment(t, b, bc)
	if env["NATS_URL"] == "" {
		env["NATS_URL"] = defaultNATSURL
	}
	cfg, err := loadBridgeConfig(t, b, bc, env)
	if err != nil {
		t.Fatalf("config.Load (see TestBridgeSettings): %v", err)
	}
	return cfg, env
}

func checkBridgeConfig(t *testing.T, b *build, bc bridgeContainer, cfg *config.Config) {
	t.Helper()
	checkGracePeriod(t, bc, cfg)
	// The HTTP listener is what the probes and the metrics Service reach.
	if cfg.HTTPAddr == "off" {
		t.Errorf("BRIDGE_HTTP_ADDR=off: no probes and no metrics")
	} else {
		port := containerPort(bc.container, "http")
		if port == nil {
			t.Errorf("%s: container %s has no port named http", bc.workload, bc.container.Name)
		} else if _, p, _ := strings.Cut(cfg.HTTPAddr, ":"); p != fmt.Sprint(port.ContainerPort) {
			t.Errorf("BRIDGE_HTTP_ADDR=%s, but the container port http is %d", cfg.HTTPAddr, port.ContainerPort)
		}
	}
	exp, known := want[b.name]
	if !known {
		return
	}
	var names []string
	for _, r := range cfg.Resources {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, exp.resources) {
		t.Errorf("BRIDGE_RESOURCES watches %q, want %q", names, exp.resources)
	}
	if !slices.Equal(cfg.Namespaces, exp.watch) {
		t.Errorf("BRIDGE_NAMESPACES is %q, want %q", cfg.Namespaces, exp.watch)
	}
	if exp.nats {
		host, port := natsTarget(t, cfg.NATSURL)
		svc := findService(b, bc.namespace, host)
		switch {
		case svc == nil:
			t.Errorf("NATS_URL=%s: no Service %s in namespace %s", cfg.NATSURL, host, bc.namespace)
		case !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == port }):
			t.Errorf("NATS_URL=%s: Service %s has no port %s", cfg.NATSURL, host, port)
		}
	}
}

func natsTarget(t *testing.T, url string) (host, port string) {
	t.Helper()
	first, _, _ := strings.Cut(url, ",")
	_, hostPort, ok := strings.Cut(strings.TrimSpace(first), "://")
	if !ok {
		t.Fatalf("NATS_URL=%s: no scheme", url)
	}
	if i := strings.LastIndex(hostPort, "@"); i >= 0 {
		hostPort = hostPort[i+1:]
	}
	host, port, ok = strings.Cut(hostPort, ":")
	if !ok {
		port = "4222"
	}
	// nats.kubebridge.svc.cluster.local and nats.kubebridge name the same
	// Service as nats from inside its namespace.
	host, _, _ = strings.Cut(host, ".")
	return host, port
}

func findService(b *build, namespace, name string) *corev1.Service {
	for _, s := range ofType[*corev1.Service](b) {
		if s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

func containerPort(c *corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// TestVariableNamesInSources: every BRIDGE_*/NATS_* name written anywhere in
// the manifests, env files and READMEs (comments included, so the names in
// commented-out examples are right too) is one the bridge reads.
func TestVariableNamesInSources(t *testing.T) {
	vars := configVariables(t)
	nameRE := regexp.MustCompile(`\b(?:BRIDGE|NATS)_[A-Z0-9_]*[A-Z0-9]\b`)
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".env", ".md":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, name := range nameRE.FindAllString(line, -1) {
				n++
				if !vars[name] {
					t.Errorf("%s:%d: %s is not a variable the bridge reads (see internal/config)", path, i+1, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no BRIDGE_*/NATS_* names found: is the test running in deploy/kustomize?")
	}
}

// podTemplate returns the pod template of a workload, nil for other kinds.
func podTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	case *corev1.Pod:
		return &corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}
	}
	return nil
}

func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

// TestPodSecurity: every container of every workload runs as a non-root
// user with a read-only root file system, no privilege escalation, no
// capabilities and the runtime's seccomp profile, with resources set.
func TestPodSecurity(t *testing.T) {
	for _, b := range okBuilds(t) {
		workloads := 0
		for _, o := range b.objects {
			pod := podTemplate(o.obj)
			if pod == nil {
				continue
			}
			workloads++
			where := b.name + ": " + o.String()
			spec := &pod.Spec
			if spec.HostNetwork || spec.HostPID || spec.HostIPC {
				t.Errorf("%s: uses a host namespace", where)
			}
			for _, v := range spec.Volumes {
				if v.HostPath != nil {
					t.Errorf("%s: volume %s is a hostPath", where, v.Name)
				}
			}
			psc := spec.SecurityContext
			if psc == nil {
				psc = &corev1.PodSecurityContext{}
			}
			for _, c := range allContainers(spec) {
				cw := fmt.Sprintf("%s: container %s", where, c.Name)
				sc := c.SecurityContext
				if sc == nil {
					t.Errorf("%s: no securityContext", cw)
					sc = &corev1.SecurityContext{}
				}
				if !isTrue(sc.RunAsNonRoot, psc.RunAsNonRoot) {
					t.Errorf("%s: runAsNonRoot is not true", cw)
				}
				if u := first(sc.RunAsUser, psc.RunAsUser); u == nil || *u == 0 {
					t.Errorf("%s: runAsUser is not a non-zero numeric user", cw)
				}
				if g := first(sc.RunAsGroup, psc.RunAsGroup); g == nil || *g == 0 {
					t.Errorf("%s: runAsGroup is not a non-zero numeric group", cw)
				}
				if !isTrue(sc.ReadOnlyRootFilesystem) {
					t.Errorf("%s: readOnlyRootFilesystem is not true", cw)
				}
				if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("%s: allowPrivilegeEscalation is not false", cw)
				}
				if isTrue(sc.Privileged) {
					t.Errorf("%s: privileged", cw)
				}
				if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
					t.Errorf("%s: capabilities do not drop ALL", cw)
				} else if len(sc.Capabilities.Add) > 0 {
					t.Errorf("%s: adds capabilities %v", cw, sc.Capabilities.Add)
				}
				seccomp := sc.SeccompProfile
				if seccomp == nil {
					seccomp = psc.SeccompProfile
				}
				if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: seccompProfile is not RuntimeDefault", cw)
				}
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
						t.Errorf("%s: no %s request", cw, r)
					}
				}
				if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || limit.IsZero() {
					t.Errorf("%s: no memory limit", cw)
				} else if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(limit) > 0 {
					t.Errorf("%s: memory request %s above the limit %s", cw, req.String(), limit.String())
				}
				if !strings.Contains(c.Image, ":") && !strings.Contains(c.Image, "@") {
					t.Errorf("%s: image %s has no tag or digest", cw, c.Image)
				}
			}
			for _, c := range spec.Containers {
				if c.LivenessProbe == nil || c.ReadinessProbe == nil {
					t.Errorf("%s: container %s: needs a liveness and a readiness probe", where, c.Name)
				}
			}
		}
		if workloads == 0 {
			t.Errorf("%s: no workloads", b.name)
		}
	}
}

func isTrue(bs ...*bool) bool {
	if p := first(bs...); p != nil {
		return *p
	}
	return false
}

// first returns the first non-nil pointer: the container's setting wins
// over the pod's.
func first[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// TestBridgeWorkload: what the bridge's pod itself needs.
func TestBridgeWorkload(t *testing.T) {
	for _, b := range okBuilds(t) {
		t.Run(b.name, func(t *testing.T) {
			bc := bridgeOf(t, b)
			c, spec := bc.container, &bc.pod.Spec
			if _, tag, ok := strings.Cut(strings.TrimPrefix(c.Image, bridgeImage), ":"); !ok || tag == "" {
				if !strings.Contains(c.Image, "@sha256:") {
					t.Errorf("image %s: the images: transformer did not set a tag", c.Image)
				}
			}
			// Replicas, strategy, disruption budget and spreading:
			// TestHighAvailability.
			var selector *metav1.LabelSelector
			cfg, _ := bridgeConfig(t, b, bc)
			switch w := bc.obj.(type) {
			case *appsv1.Deployment:
				selector = w.Spec.Selector
			case *appsv1.StatefulSet:
				// A pod's shard is its ordinal: only a StatefulSet has one.
				selector = w.Spec.Selector
				if !cfg.Shard().Sharded() {
					t.Errorf("%s: an unsharded bridge runs as a Deployment", bc.workload)
				}
			default:
				t.Errorf("%s: the bridge must run as a Deployment, or sharded as a StatefulSet", bc.workload)
			}
			if sel, err := metav1.LabelSelectorAsSelector(selector); selector != nil && (err != nil || sel.Empty() || !sel.Matches(labels.Set(bc.pod.Labels))) {
				t.Errorf("%s: selector does not match the pod template (%v)", bc.workload, err)
			}
			if !isTrue(spec.AutomountServiceAccountToken) {
				t.Errorf("automountServiceAccountToken must be true: the bridge talks to the API server")
			}
			if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
				t.Errorf("enableServiceLinks must be false: a Service named nats would add NATS_-prefixed variables")
			}
			if spec.ServiceAccountName == "" || spec.ServiceAccountName == "default" {
				t.Errorf("serviceAccountName %q: the bridge needs its own ServiceAccount", spec.ServiceAccountName)
			} else if !slices.ContainsFunc(ofType[*corev1.ServiceAccount](b), func(sa *corev1.ServiceAccount) bool {
				return sa.Name == spec.ServiceAccountName && sa.Namespace == bc.namespace
			}) {
				t.Errorf("ServiceAccount %s/%s is not in the output", bc.namespace, spec.ServiceAccountName)
			}
			// The listener starts only once NATS is connected: the startup
			// probe keeps liveness from restarting a bridge that waits for it.
			checkProbe(t, "startup", c.StartupProbe, "/healthz")
			checkProbe(t, "liveness", c.LivenessProbe, "/healthz")
			checkProbe(t, "readiness", c.ReadinessProbe, "/readyz")
			// The image's user (TestPodSecurity checks the rest).
			var user, podUser *int64
			if c.SecurityContext != nil {
				user = c.SecurityContext.RunAsUser
			}
			if spec.SecurityContext != nil {
				podUser = spec.SecurityContext.RunAsUser
			}
			if u := first(user, podUser); u == nil || *u != 65532 {
				t.Errorf("the bridge must run as user 65532, the image's")
			}
			// The NATS credentials: an optional Secret volume at the path
			// bridge.env documents.
			var mounted bool
			for _, m := range c.VolumeMounts {
				if m.MountPath != "/etc/kubebridge/nats" {
					continue
				}
				mounted = true
				if !m.ReadOnly {
					t.Errorf("volume mount %s is not read-only", m.MountPath)
				}
				for _, v := range spec.Volumes {
					if v.Name != m.Name {
						continue
					}
					if v.Secret == nil || v.Secret.SecretName != "kubebridge-nats" || !isTrue(v.Secret.Optional) {
						t.Errorf("volume %s must be the optional Secret kubebridge-nats", v.Name)
					} else if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440 {
						t.Errorf("volume %s: defaultMode %v, want 0440", v.Name, v.Secret.DefaultMode)
					}
				}
			}
			if !mounted {
				t.Errorf("nothing mounted at /etc/kubebridge/nats")
			}
		})
	}
}

func checkProbe(t *testing.T, kind string, p *corev1.Probe, path string) {
	t.Helper()
	switch {
	case p == nil:
		t.Errorf("no %s probe", kind)
	case p.HTTPGet == nil:
		t.Errorf("%s probe is not an HTTP GET", kind)
	case p.HTTPGet.Path != path:
		t.Errorf("%s probe GETs %s, want %s", kind, p.HTTPGet.Path, path)
	case p.HTTPGet.Port != intstr.FromString("http") && p.HTTPGet.Port != intstr.FromInt32(8080):
		t.Errorf("%s probe port %s, want http (8080)", kind, p.HTTPGet.Port.String())
	}
}

// TestServices: every Service selects pods of the same build and reaches
// ports they have; the bridge's metrics Service carries the scrape
// annotations.
func TestServices(t *testing.T) {
	for _, b := range okBuilds(t) {
		var metrics int
		for _, svc := range ofType[*corev1.Service](b) {
			where := fmt.Sprintf("%s: Service %s", b.name, svc.Name)
			var pods []*corev1.PodTemplateSpec
			for _, o := range b.objects {
				if pod := podTemplate(o.obj); pod != nil && o.m.GetNamespace() == svc.Namespace &&
					len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
					pods = append(pods, pod)
				}
			}
			if len(pods) == 0 {
				t.Errorf("%s: selector %v matches no pod template", where, svc.Spec.Selector)
				continue
			}
			for _, p := range svc.Spec.Ports {
				target := p.TargetPort
				if target.Type == intstr.Int && target.IntVal == 0 {
					target = intstr.FromInt32(p.Port)
				}
				for _, pod := range pods {
					if !podHasPort(pod, target) {
						t.Errorf("%s: port %s targets %s, which the pods do not declare", where, p.Name, target.String())
					}
				}
			}
			if svc.Annotations["prometheus.io/scrape"] == "true" {
				metrics++
				port := svc.Annotations["prometheus.io/port"]
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == port }) {
					t.Errorf("%s: prometheus.io/port %q is not a port of the Service", where, port)
				}
				if path := svc.Annotations["prometheus.io/path"]; path != "/metrics" {
					t.Errorf("%s: prometheus.io/path %q, want /metrics", where, path)
				}
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "http-metrics" }) {
					t.Errorf("%s: no port named http-metrics", where)
				}
			}
		}
		if metrics == 0 {
			t.Errorf("%s: no Service with prometheus.io/scrape: \"true\"", b.name)
		}
	}
}

func podHasPort(pod *corev1.PodTemplateSpec, target intstr.IntOrString) bool {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return true
			}
		}
	}
	return false
}

// TestRBAC: roles grant only get, list and watch (and, with leader election,
// get, create and update on Leases in a Role in the Lease's namespace),
// without wildcards, only
// on the types in BRIDGE_RESOURCES (so no Secrets unless configured), and
// every configured type is granted where the bridge watches it. The
// namespaced overlay has no cluster-wide RBAC at all.
func TestRBAC(t *testing.T) {
	allowed := []string{"get", "list", "watch"}
	for _, b := range okBuilds(t) {
		t.Run(b.name, func(t *testing.T) {
			exp, known := want[b.name]
			if known && !exp.clusterRBAC {
				for _, o := range b.objects {
					if o.gvk.Kind == "ClusterRole" || o.gvk.Kind == "ClusterRoleBinding" {
						t.Errorf("%s: this kustomization must not grant anything cluster-wide", o)
					}
				}
			}

			bc := bridgeOf(t, b)
			cfg, env := bridgeConfig(t, b, bc)
			configured := map[schema.GroupResource]config.ResourceSpec{}
			for _, spec := range cfg.Resources {
				gr, err := groupResource(spec.Name)
				if err != nil {
					t.Errorf("BRIDGE_RESOURCES: %v", err)
					continue
				}
				configured[gr] = spec
			}

			// The Lease of leader election: get, create and update, in a Role
			// in the Lease's namespace (default: the bridge's own).
			leaseNS := env["BRIDGE_LEASE_NAMESPACE"]
			if leaseNS == "" {
				leaseNS = bc.namespace
			}
			isLeaseRule := func(r rbacv1.PolicyRule) bool {
				return slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) && slices.Equal(r.Resources, []string{"leases"})
			}
			// Least privilege, in every role of the build.
			checkRules := func(where, namespace string, rules []rbacv1.PolicyRule) {
				for _, r := range rules {
					if isLeaseRule(r) {
						switch {
						case !cfg.LeaderElection:
							t.Errorf("%s: grants leases, but BRIDGE_LEADER_ELECTION is off", where)
						case namespace != leaseNS:
							t.Errorf("%s: grants leases outside the Lease's namespace %s (a Role there, not a ClusterRole)", where, leaseNS)
						case len(r.ResourceNames) > 0 || !slices.Equal(r.Verbs, []string{"get", "create", "update"}):
							t.Errorf("%s: leases: verbs %v, names %v; want exactly get, create, update", where, r.Verbs, r.ResourceNames)
						}
						continue
					}
					// A shard lists namespaces, once, for the apiserver's
					// shard selector (the other shards' namespaces).
					if slices.Equal(r.APIGroups, []string{""}) && slices.Equal(r.Resources, []string{"namespaces"}) {
						switch {
						case !cfg.Shard().Sharded():
							t.Errorf("%s: grants namespaces, but the bridge is not sharded", where)
						case namespace != "":
							t.Errorf("%s: namespaces are cluster-scoped: a ClusterRole, not a Role in %s", where, namespace)
						case len(r.ResourceNames) > 0 || !slices.Equal(r.Verbs, []string{"list"}):
							t.Errorf("%s: namespaces: verbs %v, names %v; want exactly list", where, r.Verbs, r.ResourceNames)
						}
						continue
					}
					if len(r.NonResourceURLs) > 0 {
						t.Errorf("%s: grants non-resource URLs %v", where, r.NonResourceURLs)
					}
					for _, v := range r.Verbs {
						if !slices.Contains(allowed, v) {
							t.Errorf("%s: verb %q: only get, list and watch are allowed", where, v)
						}
					}
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							if g == "*" || res == "*" || strings.Contains(res, "/") {
								t.Errorf("%s: %q in group %q: no wildcards or subresources", where, res, g)
								continue
							}
							if _, ok := configured[schema.GroupResource{Group: g, Resource: res}]; !ok {
								t.Errorf("%s: grants %s, which BRIDGE_RESOURCES does not watch", where, schema.GroupResource{Group: g, Resource: res})
							}
						}
					}
				}
			}
			roles := map[string][]rbacv1.PolicyRule{} // "Role ns/name" or "ClusterRole name"
			for _, r := range ofType[*rbacv1.ClusterRole](b) {
				if r.AggregationRule != nil {
					t.Errorf("ClusterRole %s: aggregation rules would grant what other roles grant", r.Name)
				}
				roles["ClusterRole "+r.Name] = r.Rules
				checkRules("ClusterRole "+r.Name, "", r.Rules)
			}
			for _, r := range ofType[*rbacv1.Role](b) {
				roles["Role "+r.Namespace+"/"+r.Name] = r.Rules
				checkRules("Role "+r.Namespace+"/"+r.Name, r.Namespace, r.Rules)
			}

			// What the bridge's ServiceAccount may do: namespace "" is every
			// namespace.
			type grant struct {
				namespace string
				rules     []rbacv1.PolicyRule
			}
			var grants []grant
			sa := bc.pod.Spec.ServiceAccountName
			isBridge := func(where, bindingNS string, subjects []rbacv1.Subject) bool {
				for _, s := range subjects {
					ns := s.Namespace
					if ns == "" {
						ns = bindingNS
					}
					if s.Kind == rbacv1.ServiceAccountKind && ns == "" {
						t.Errorf("%s: ServiceAccount subject %s has no namespace", where, s.Name)
					}
					if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && ns == bc.namespace {
						return true
					}
				}
				return false
			}
			for _, rb := range ofType[*rbacv1.ClusterRoleBinding](b) {
				where := "ClusterRoleBinding " + rb.Name
				rules, ok := roles["ClusterRole "+rb.RoleRef.Name]
				if rb.RoleRef.Kind != "ClusterRole" || !ok {
					t.Errorf("%s: refers to %s %s, which is not in the output", where, rb.RoleRef.Kind, rb.RoleRef.Name)
				}
				if isBridge(where, "", rb.Subjects) {
					grants = append(grants, grant{"", rules})
				}
			}
			for _, rb := range ofType[*rbacv1.RoleBinding](b) {
				where := "RoleBinding " + rb.Namespace + "/" + rb.Name
				key := "ClusterRole " + rb.RoleRef.Name
				if rb.RoleRef.Kind == "Role" {
					key = "Role " + rb.Namespace + "/" + rb.RoleRef.Name
				}
				rules, ok := roles[key]
				if !ok {
					t.Errorf("%s: refers to %s, which is not in the output", where, key)
				}
				if isBridge(where, rb.Namespace, rb.Subjects) {
					grants = append(grants, grant{rb.Namespace, rules})
				}
			}

			if cfg.LeaderElection && !slices.ContainsFunc(grants, func(g grant) bool {
				return g.namespace == leaseNS && slices.ContainsFunc(g.rules, isLeaseRule)
			}) {
				t.Errorf("BRIDGE_LEADER_ELECTION is on, but ServiceAccount %s/%s may not get, create and update Leases in %s", bc.namespace, sa, leaseNS)
			}

			// Every configured type, in every namespace it is watched in.
			for gr, spec := range configured {
				namespaces := spec.Namespaces
				if len(namespaces) == 0 {
					namespaces = cfg.Namespaces
				}
				if len(namespaces) == 0 || clusterScopedResources[gr] {
					namespaces = []string{""}
				}
				for _, ns := range namespaces {
					ok := slices.ContainsFunc(grants, func(g grant) bool {
						return (g.namespace == "" || g.namespace == ns) && grantsWatch(g.rules, gr)
					})
					if !ok {
						where := "in every namespace (a ClusterRoleBinding)"
						if ns != "" {
							where = "in namespace " + ns
						}
						t.Errorf("BRIDGE_RESOURCES has %s, but ServiceAccount %s/%s may not list and watch %s %s", spec.Name, bc.namespace, sa, gr, where)
					}
				}
			}
		})
	}
}

var clusterScopedResources = map[schema.GroupResource]bool{
	{Resource: "namespaces"}: true, {Resource: "nodes"}: true, {Resource: "persistentvolumes"}: true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:         true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:  true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:                  true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

func grantsWatch(rules []rbacv1.PolicyRule, gr schema.GroupResource) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, gr.Group) && slices.Contains(r.Resources, gr.Resource) && len(r.ResourceNames) == 0 &&
			slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
			return true
		}
	}
	return false
}

var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// groupResource maps a BRIDGE_RESOURCES name to the group and plural
// resource RBAC speaks of, without an API server: built-in types through
// the client-go scheme, anything else (custom resources) as written, which
// must then be the plural (widgets.example.com, widgets.v1.example.com).
// Short names (cm, deploy) would need discovery and are refused.
func groupResource(name string) (schema.GroupResource, error) {
	full, gr := schema.ParseResourceArg(strings.ToLower(name))
	if full != nil && versionRE.MatchString(full.Version) {
		gr = full.GroupResource()
	}
	known := map[string]bool{} // groups of the scheme
	var candidates []schema.GroupResource
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		known[gvk.Group] = true
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		if plural.Resource != gr.Resource && singular.Resource != gr.Resource {
			continue
		}
		c := plural.GroupResource()
		if (gr.Group == "" || gr.Group == c.Group) && !slices.Contains(candidates, c) {
			candidates = append(candidates, c)
		}
	}
	if gr.Group == "" && slices.Contains(candidates, schema.GroupResource{Resource: gr.Resource}) {
		return gr, nil // kubectl prefers the core group
	}
	switch {
	case len(candidates) == 1:
		return candidates[0], nil
	case len(candidates) > 1:
		return gr, fmt.Errorf("%s is ambiguous (%v): name the group", name, candidates)
	case known[gr.Group]:
		return gr, fmt.Errorf("%s: no such built-in type; short names need discovery: use the plural resource name", name)
	case gr.Group == "":
		return gr, fmt.Errorf("%s: not a built-in type; name custom resources as <plural>.<group>", name)
	}
	return gr, nil
}

// objectID names an object for a message from its raw JSON.
func objectID(data []byte) string {
	var o struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &o)
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// saMountPath is where the kubelet mounts a pod's ServiceAccount token and
// where rest.InClusterConfig reads it.
const saMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// kubelet makes pods of a Deployment's template the way the kubelet would,
// in as far as the bridge's container can tell: its environment, user,
// groups, volumes, ServiceAccount token and the addresses it reaches.
type kubelet struct {
	t     *testing.T
	ctx   context.Context
	cs    kubernetes.Interface
	dir   string
	image string         // directory holding the image's files
	cfg   *v1.ConfigFile // the image's config
	// apiserver: the kubernetes Service's cluster IP and port, and the
	// apiserver's CA (what kube-root-ca.crt holds in a cluster).
	apiIP   string
	apiPort int32
	caPEM   []byte
	// services: "clusterIP:port" → where that Service is served here.
	services map[string]func() string
	hosts    string // the cluster DNS names of the Services, as /etc/hosts lines
	seq      int
}

// probe is one httpGet probe of the container, its port resolved.
type probe struct {
	kind string // startup, liveness, readiness
	path string
	port int
	*corev1.Probe
}

// pod returns the spec of one pod of the template tmpl in namespace ns,
// named name with a pod IP of its own, and the container's probes. The test fails on anything in the template
// this kubelet does not know, so the rehearsal cannot silently run a
// different pod than the manifest describes.
func (k *kubelet) pod(ns string, tmpl *corev1.PodSpec, name string) (podSpec, []probe) {
	t := k.t
	t.Helper()
	if len(tmpl.Containers) != 1 || len(tmpl.InitContainers) > 0 {
		t.Fatalf("the template has %d containers and %d init containers; the rehearsal runs one container", len(tmpl.Containers), len(tmpl.InitContainers))
	}
	c := tmpl.Containers[0]
	k.seq++
	ip := fmt.Sprintf("10.244.0.%d", 10+k.seq)
	dir := filepath.Join(k.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := podSpec{name: name, ip: ip, image: k.image, services: k.services}

	// User and groups: the container's securityContext over the pod's over
	// the image's USER.
	psc, csc := tmpl.SecurityContext, c.SecurityContext
	if psc == nil || csc == nil {
		t.Fatal("the template has no pod or container securityContext")
	}
	uid, gid := k.imageUser()
	for _, v := range []*int64{psc.RunAsUser, csc.RunAsUser} {
		if v != nil {
			uid = *v
		}
	}
	for _, v := range []*int64{psc.RunAsGroup, csc.RunAsGroup} {
		if v != nil {
			gid = *v
		}
	}
	spec.uid, spec.gid = uid, gid
	if psc.FSGroup != nil {
		spec.groups = append(spec.groups, *psc.FSGroup)
	}
	spec.groups = append(spec.groups, psc.SupplementalGroups...)
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") || len(csc.Capabilities.Add) > 0 || (csc.Privileged != nil && *csc.Privileged) {
		t.Fatal("the container may escalate or keeps capabilities: the rehearsal runs it with no_new_privs and none")
	}
	spec.readOnly = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem

	spec.entrypoint = slices.Clone(k.cfg.Config.Entrypoint)
	if len(c.Command) > 0 {
		spec.entrypoint = slices.Clone(c.Command)
	}
	if len(c.Args) > 0 {
		spec.entrypoint = append(spec.entrypoint, c.Args...)
	} else if len(c.Command) == 0 {
		spec.entrypoint = append(spec.entrypoint, k.cfg.Config.Cmd...)
	}
	spec.env = k.env(ns, tmpl, c, name, ip)
	spec.mounts = k.mounts(ns, tmpl, c, dir, name)
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte(fmt.Sprintf("127.0.0.1\tlocalhost\n%s\t%s\n%s", ip, name, k.hosts)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.mounts = append(spec.mounts, podMount{source: hosts, target: "/etc/hosts", readOnly: true})

	var probes []probe
	for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet == nil {
			t.Fatalf("the %s probe is not an httpGet probe", kind)
		}
		probes = append(probes, probe{kind: kind, path: p.HTTPGet.Path, port: containerPort(t, c, p.HTTPGet.Port), Probe: p})
	}
	sort.Slice(probes, func(i, j int) bool { return probes[i].kind < probes[j].kind })
	return spec, probes
}

// imageUser is the image's USER, uid:gid.
func (k *kubelet) imageUser() (int64, int64) {
	u, g, _ := strings.Cut(k.cfg.Config.User, ":")
	uid, err1 := strconv.ParseInt(u, 10, 64)
	gid, err2 := strconv.ParseInt(g, 10, 64)
	if err1 != nil || err2 != nil {
		k.t.Fatalf("the image's user %q is not uid:gid", k.cfg.Config.User)
	}
	return uid, gid
}

// env is the container's environment: the image's, envFrom, env, then what
// the kubelet adds (the kubernetes Service's variables, HOSTNAME).
func (k *kubelet) env(ns string, tmpl *corev1.PodSpec, c corev1.Container, name, ip string) []string {
	t := k.t
	t.Helper()
	env := map[string]string{}
	for _, kv := range k.cfg.Config.Env {
		key, v, _ := strings.Cut(kv, "=")
		env[key] = v
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := k.cs.CoreV1().ConfigMaps(ns).Get(k.ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional)) {
				t.Fatalf("envFrom ConfigMap %s: %v", from.ConfigMapRef.Name, err)
			}
			if err == nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			data = k.secretData(ns, from.SecretRef.Name, isTrue(from.SecretRef.Optional))
		}
		for key, v := range data {
			env[from.Prefix+key] = v
		}
	}
	for _, e := range c.Env {
		if strings.Contains(e.Value, "$(") {
			t.Fatalf("env %s uses $(VAR) expansion, which the rehearsal does not do", e.Name)
		}
		v, ok := e.Value, true
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil:
				v = map[string]string{"metadata.name": name, "metadata.namespace": ns, "status.podIP": ip, "spec.serviceAccountName": tmpl.ServiceAccountName}[src.FieldRef.FieldPath]
				if v == "" {
					t.Fatalf("env %s: fieldRef %s is not known to the rehearsal", e.Name, src.FieldRef.FieldPath)
				}
			case src.ResourceFieldRef != nil:
				v = resourceValue(t, c, src.ResourceFieldRef)
			case src.SecretKeyRef != nil:
				v, ok = k.secretData(ns, src.SecretKeyRef.Name, isTrue(src.SecretKeyRef.Optional))[src.SecretKeyRef.Key]
				if !ok && !isTrue(src.SecretKeyRef.Optional) {
					t.Fatalf("env %s: Secret %s has no key %s", e.Name, src.SecretKeyRef.Name, src.SecretKeyRef.Key)
				}
			default:
				t.Fatalf("env %s: a valueFrom the rehearsal does not know", e.Name)
			}
		}
		if ok {
			env[e.Name] = v
		}
	}
	if tmpl.EnableServiceLinks == nil || *tmpl.EnableServiceLinks {
		t.Fatal("enableServiceLinks is not false: the rehearsal does not add every Service's variables")
	}
	port := strconv.Itoa(int(k.apiPort))
	addr := "tcp://" + k.apiIP + ":" + port
	for key, v := range map[string]string{
		"KUBERNETES_SERVICE_HOST": k.apiIP, "KUBERNETES_SERVICE_PORT": port, "KUBERNETES_SERVICE_PORT_HTTPS": port,
		"KUBERNETES_PORT": addr, "KUBERNETES_PORT_" + port + "_TCP": addr, "KUBERNETES_PORT_" + port + "_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_" + port + "_TCP_PORT": port, "KUBERNETES_PORT_" + port + "_TCP_ADDR": k.apiIP, "HOSTNAME": name,
	} {
		env[key] = v
	}
	return environ(env)
}

// mounts are the container's volumes, and the ServiceAccount token where
// rest.InClusterConfig reads it, staged under dir.
func (k *kubelet) mounts(ns string, tmpl *corev1.PodSpec, c corev1.Container, dir, name string) []podMount {
	t := k.t
	t.Helper()
	fsGroup := -1
	if tmpl.SecurityContext.FSGroup != nil {
		fsGroup = int(*tmpl.SecurityContext.FSGroup)
	}
	var mounts []podMount
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(tmpl.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			t.Fatalf("volumeMount %s: no such volume", vm.Name)
		}
		vol := tmpl.Volumes[i]
		src := filepath.Join(dir, "volumes", vol.Name)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		readOnly := vm.ReadOnly
		switch {
		case vol.Secret != nil:
			if len(vol.Secret.Items) > 0 {
				t.Fatalf("volume %s: items are not known to the rehearsal", vol.Name)
			}
			mode := os.FileMode(0o644)
			if vol.Secret.DefaultMode != nil {
				mode = os.FileMode(*vol.Secret.DefaultMode)
			}
			for key, v := range k.secretData(ns, vol.Secret.SecretName, isTrue(vol.Secret.Optional)) {
				writeVolumeFile(t, filepath.Join(src, key), []byte(v), mode, fsGroup)
			}
			readOnly = true // the kubelet mounts Secrets read-only
		case vol.ConfigMap != nil:
			if len(vol.ConfigMap.Items) > 0 {
				t.Fatalf("volume %s: items are not known to the rehearsal", vol.Name)
			}
			mode := os.FileMode(0o644)
			if vol.ConfigMap.DefaultMode != nil {
				mode = os.FileMode(*vol.ConfigMap.DefaultMode)
			}
			cm, err := k.cs.CoreV1().ConfigMaps(ns).Get(k.ctx, vol.ConfigMap.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && isTrue(vol.ConfigMap.Optional)) {
				t.Fatalf("volume %s: ConfigMap %s: %v", vol.Name, vol.ConfigMap.Name, err)
			}
			if err == nil {
				for key, v := range cm.Data {
					writeVolumeFile(t, filepath.Join(src, key), []byte(v), mode, fsGroup)
				}
			}
			readOnly = true // the kubelet mounts ConfigMaps read-only
		case vol.EmptyDir != nil:
			if err := os.Chmod(src, 0o777); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("volume %s: a kind the rehearsal does not know", vol.Name)
		}
		mounts = append(mounts, podMount{source: src, target: vm.MountPath, readOnly: readOnly})
	}
	automount := tmpl.AutomountServiceAccountToken == nil || *tmpl.AutomountServiceAccountToken
	if !automount {
		return mounts
	}
	sa := tmpl.ServiceAccountName
	tr, err := k.cs.CoreV1().ServiceAccounts(ns).CreateToken(k.ctx, sa, tokenRequest(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", ns, sa, err)
	}
	src := filepath.Join(dir, "serviceaccount")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": k.caPEM, "namespace": []byte(ns)} {
		writeVolumeFile(t, filepath.Join(src, file), data, 0o644, fsGroup)
	}
	return append(mounts, podMount{source: src, target: saMountPath, readOnly: true})
}

func (k *kubelet) secretData(ns, name string, optional bool) map[string]string {
	s, err := k.cs.CoreV1().Secrets(ns).Get(k.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional {
		return nil
	}
	if err != nil {
		k.t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	out := map[string]string{}
	for key, v := range s.Data {
		out[key] = string(v)
	}
	return out
}

func writeVolumeFile(t *testing.T, path string, data []byte, mode os.FileMode, group int) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if group >= 0 {
		if err := os.Chown(path, 0, group); err != nil {
			t.Fatal(err)
		}
	}
}

// resourceValue is a resourceFieldRef's value, rounded up in its divisor.
func resourceValue(t *testing.T, c corev1.Container, ref *corev1.ResourceFieldSelector) string {
	t.Helper()
	list, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (list != "limits" && list != "requests") {
		t.Fatalf("resourceFieldRef %s is not known to the rehearsal", ref.Resource)
	}
	q, found := c.Resources.Limits[corev1.ResourceName(res)]
	if list == "requests" {
		q, found = c.Resources.Requests[corev1.ResourceName(res)]
	}
	if !found {
		t.Fatalf("resourceFieldRef %s: the container sets none (the kubelet would use the node's allocatable)", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	n := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
	return strconv.FormatInt(n, 10)
}

// containerPort resolves a probe's port, by number or by name.
func containerPort(t *testing.T, c corev1.Container, port intstr.IntOrString) int {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntValue()
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("the container has no port named %s", port.StrVal)
	return 0
}

func isTrue(b *bool) bool { return b != nil && *b }

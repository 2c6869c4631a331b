package e2e

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/image"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// rehearsalOverlay is the overlay the rehearsal deploys, and the namespace
// it renders into.
const (
	rehearsalOverlay    = "overlays/with-nats"
	rehearsalRenderedNS = "kubebridge"
)

// rehearsal is one deployment of the overlay on the test apiserver, with
// the NATS it brings and the pods run from the image.
type rehearsal struct {
	t       *testing.T
	ctx     context.Context
	env     *testenv.Env
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	tools   podTools
	kubelet *kubelet
	id      string // the namespace, and the suffix of cluster-scoped names
	natsURL string
	js      jetstream.JetStream
	// services: "clusterIP:port" of a Service → its endpoints here, one
	// each time (kube-proxy's choice).
	services map[string]func() string
	pods     []*rehearsalPod
}

// rehearsalPod is a pod of the Deployment and its probes.
type rehearsalPod struct {
	*pod
	probes []probe
	cfg    *config.Config // the bridge's settings, loaded from its environment
}

func tokenRequest() *authenticationv1.TokenRequest {
	// The kubelet asks for about an hour, renewing before it runs out.
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607)}}
}

// podSandbox finds the tools and checks that this machine lets the test
// build a sandbox: it runs the image's bridge --version in one. Where it
// cannot, the test skips saying why (and fails under
// KUBEBRIDGE_REQUIRE_E2E=1).
func podSandbox(t *testing.T, imageDir string) podTools {
	t.Helper()
	refuse := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("the deployment rehearsal needs a sandbox (root, unshare --mount --net, mount, chroot, setpriv): "+format, args...)
		if testenv.Required() {
			t.Fatal(msg + " ($" + testenv.EnvRequireE2E + "=1)")
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		refuse("not running as root")
	}
	tools, err := lookPodTools()
	if err != nil {
		refuse("%v", err)
	}
	spec := podSpec{name: "preflight", ip: "10.244.255.1", image: imageDir, entrypoint: []string{"/bridge", "--version"}, uid: 65532, gid: 65532, readOnly: true}
	p, err := startPod(t.TempDir(), tools, spec)
	if err != nil {
		refuse("%v", err)
	}
	<-p.done
	if p.state.ExitCode() != 0 || strings.TrimSpace(p.output()) == "" {
		refuse("bridge --version in a sandbox: %v: %s", p.state, p.output())
	}
	return tools
}

// TestDeploymentRehearsal deploys overlays/with-nats on the real apiserver
// the way kubectl apply -k would (every object stored: namespace,
// ServiceAccount, RBAC, ConfigMap, Lease Role, PDB, Services, Deployment,
// StatefulSet), serves the NATS its StatefulSet describes, and runs the
// bridge binary from the image built by make image as each of the
// Deployment's pods would run: its environment from the stored template
// (envFrom the generated ConfigMap, then env), in-cluster configuration
// (KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's own token from a
// TokenRequest, with the apiserver's CA, where rest.InClusterConfig reads
// them), as uid 65532 in a read-only root made of the image's files, in a
// network of its own where the Services' cluster IPs lead where kube-proxy
// would lead them, probed on the paths and ports the manifest names.
//
// Checked: both replicas become ready and exactly one leads; changes to
// the default types reach the stream and decode with sdk-go; after a
// SIGKILL of the leader the other takes over; and a type added to
// BRIDGE_RESOURCES without its RBAC rule gives a clear log line and a
// /readyz naming it, while the pod keeps running.
func TestDeploymentRehearsal(t *testing.T) {
	// Its own NATS, namespaces and names: it runs beside the others
	// that do (testenv's shared NATS is not touched).
	t.Parallel()
	ctx, cancel := rehearsalContext(t)
	defer cancel()
	kdir := filepath.Join(deployModuleRoot(t), "deploy", "kustomize")
	r := newRehearsal(ctx, t, filepath.Join(kdir, filepath.FromSlash(rehearsalOverlay)))

	d := r.deployment()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Fatalf("the Deployment has %v replicas; the rehearsal runs the two of the base", d.Spec.Replicas)
	}
	for range int(*d.Spec.Replicas) {
		r.pods = append(r.pods, r.startPod(d))
	}
	for _, p := range r.pods {
		r.waitReady(p, 3*time.Minute)
		r.checkSandbox(p)
	}
	leader, standby := r.leader()
	t.Logf("both replicas ready; %s leads, %s stands by", leader.spec.name, standby.spec.name)
	r.checkStream(leader)

	ns := r.checkChanges(leader)
	r.checkTakeover(leader, standby, ns)
	r.checkMissingPermission(standby)

	r.stopPods(&d.Spec.Template.Spec)
}

// stopPods sends every running pod SIGTERM, as the kubelet does on
// deletion, and wants each to exit 0 within the template's grace period.
func (r *rehearsal) stopPods(tmpl *corev1.PodSpec) {
	grace := time.Duration(*tmpl.TerminationGracePeriodSeconds) * time.Second
	for _, p := range r.pods {
		if p.exited() {
			continue
		}
		if code, err := p.stop(grace); err != nil || code != 0 {
			r.t.Errorf("%s: SIGTERM: exit %d (%v), want 0 within the grace period", p.spec.name, code, err)
		}
	}
}

// rehearsalContext is a rehearsal's deadline of 10 minutes, started once
// the image is built: the image is built once for every test that runs
// it, under its own timeout (imageBuildTimeout), and a slow build beside
// the other tests must not use up the rehearsal's time.
func rehearsalContext(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	waited := time.Now()
	theImage(t)
	t.Logf("image ready after %v", time.Since(waited).Round(time.Second))
	return context.WithTimeout(context.Background(), 10*time.Minute)
}

// newRehearsal applies the overlay in dir to the test apiserver in a
// namespace of its own, serves the NATS it describes, and readies a
// kubelet that runs pods from the image built by make image.
func newRehearsal(ctx context.Context, t *testing.T, dir string) *rehearsal {
	t.Helper()
	env := testenv.Get(t)
	built := theImage(t)
	imageDir, imageCfg := hostImage(t, built)
	tools := podSandbox(t, imageDir)
	r := &rehearsal{t: t, ctx: ctx, env: env, tools: tools, id: "rehearsal-" + utilrand.String(5)}
	rc := env.RESTConfig()
	var err error
	if r.cs, err = kubernetes.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	if r.dyn, err = dynamic.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	r.apply(dir)
	r.startNATS()
	r.kubelet = r.newKubelet(imageDir, imageCfg)
	return r
}

// hostImage writes the files of the image for this machine's platform to a
// directory, as a container runtime unpacks them, and returns it with the
// image's config.
func hostImage(t *testing.T, b *imageBuild) (string, *v1.ConfigFile) {
	t.Helper()
	platforms, images, err := image.Platforms(b.image.Index)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(platforms, func(p v1.Platform) bool { return p.OS == "linux" && p.Architecture == runtime.GOARCH })
	if i < 0 {
		t.Fatalf("the image has no linux/%s", runtime.GOARCH)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := b.files(platforms[i], images[i])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f.header.Name, "/") || f.header.Typeflag != tar.TypeReg {
			t.Fatalf("the rehearsal unpacks regular files at the image's root only, not %s (type %q)", f.header.Name, f.header.Typeflag)
		}
		if err := os.WriteFile(filepath.Join(dir, f.header.Name), f.data, os.FileMode(f.header.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := images[i].ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// apply renders the overlay in dir, moves it to the rehearsal's namespace
// and names, and applies every object for real. Applying a second overlay
// with the same objects updates them, as kubectl apply -k does.
func (r *rehearsal) apply(dir string) {
	t := r.t
	t.Helper()
	objs := deployRender(t, dir)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(r.cs.Discovery()))
	mappings := deployRewrite(t, mapper, objs, rehearsalRenderedNS, r.id, "-"+r.id)
	store := func(string) bool { return false }
	deployCleanup(t, r.cs, r.dyn, objs, mappings, r.id, store)
	deployApply(r.ctx, t, r.env.RESTConfig(), objs, mappings, store)
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("applied %d objects of %s in namespace %s", len(objs), filepath.Base(dir), r.id)
}

func (r *rehearsal) deployment() *appsv1.Deployment {
	r.t.Helper()
	d, err := r.cs.AppsV1().Deployments(r.id).Get(r.ctx, "kubebridge", metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

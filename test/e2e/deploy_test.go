package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// deployKustomizations are the kustomizations under deploy/kustomize that
// TestDeployOverlays applies. A kustomization found on disk but missing
// here fails the test: add it, with what it must grant.
var deployKustomizations = []deployCase{
	{dir: "base", namespace: "kubebridge", clusterWide: true},
	{dir: "overlays/namespaced", namespace: "apps"},
	{dir: "overlays/with-nats", namespace: "kubebridge", clusterWide: true},
	{dir: "overlays/example-crd", namespace: "kubebridge", clusterWide: true, widgetCRD: true},
	{dir: "overlays/sharded", namespace: "kubebridge", clusterWide: true},
}

// deployCase is one kustomization and what it must grant.
type deployCase struct {
	dir       string // relative to deploy/kustomize
	namespace string // the namespace it renders into
	// clusterWide: the bridge watches every namespace, through a
	// ClusterRoleBinding. Else it watches its own namespace only, granted by
	// a RoleBinding there, and may list and watch nothing elsewhere.
	clusterWide bool
	widgetCRD   bool // watches widgets.example.com, which it does not ship
}

const (
	deployFieldManager = "kubebridge-e2e"
	deployBridgeImage  = "ghcr.io/kubebridge/kubebridge"
	// How long a new binding may take to reach the apiserver's RBAC
	// authorizer (it reads roles and bindings from informers).
	deployRBACTimeout = 30 * time.Second
)

// deploySeq numbers the namespaces of TestDeployOverlays within one test
// binary, also across -count=N.
var deploySeq atomic.Int64

// TestDeployOverlays renders every kustomization of deploy/kustomize with
// kustomize's krusty (as `kubectl apply -k` does), applies the output to
// the test apiserver with server-side apply, and then asks the apiserver,
// with SubjectAccessReviews for the bridge's ServiceAccount, whether the
// RBAC it ships lets the bridge list and watch every type in
// BRIDGE_RESOURCES, where it watches them, and nothing more: no Secrets it
// does not watch, no writes, no escalation.
//
// The kustomizations share one apiserver, so each one's objects move to a
// namespace of their own (deploy-<n>-<random>) and its cluster-scoped
// objects get that name as a suffix; the references between them (role
// refs, ServiceAccount subjects) move along. Everything else is applied as
// rendered. Objects whose creation needs controllers (Deployments,
// StatefulSets) are applied with dryRun=All: the apiserver validates and
// admits them (including Pod Security warnings, which fail the test) but
// does not store them.
func TestDeployOverlays(t *testing.T) {
	env := testenv.Get(t)
	start := time.Now()
	root := deployModuleRoot(t)
	kdir := filepath.Join(root, "deploy", "kustomize")
	deployCheckTable(t, kdir)

	kube := env.Clients(t)
	rc, cs, dyn := kube.REST, kube.Kube, kube.Dynamic

	// Positive controls: a "denied" answer means something only if the same
	// question is answered "allowed" for someone who holds the permission.
	// The admin (system:masters) may create Secrets, and so may a
	// ServiceAccount bound to cluster-admin, asked about with exactly the
	// identity shape used for the bridge's ServiceAccount.
	if res := deploySAR(t, cs, testenv.AdminUser, []string{"system:masters", "system:authenticated"},
		authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Resource: "secrets"}); !res.Allowed {
		t.Fatalf("control: admin (system:masters) may not create secrets (reason %q, error %q): the SubjectAccessReviews cannot be trusted", res.Reason, res.EvaluationError)
	}
	control := deployControlAccount(t, cs)

	for _, k := range deployKustomizations {
		t.Run(k.dir, func(t *testing.T) {
			deployKustomization(t, rc, cs, dyn, kdir, k, control)
		})
	}
	t.Logf("%d kustomizations in %v", len(deployKustomizations), time.Since(start).Round(time.Millisecond))
}

// deployKustomization is one subtest of TestDeployOverlays.
func deployKustomization(t *testing.T, rc *rest.Config, cs kubernetes.Interface, dyn dynamic.Interface, kdir string, k deployCase, control deployIdentity) {
	start := time.Now()
	dir := filepath.Join(kdir, filepath.FromSlash(k.dir))
	renderedNS, clusterWide := k.namespace, k.clusterWide
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// 1. Render.
	objs := deployRender(t, dir)
	t.Logf("rendered %d objects in %v", len(objs), time.Since(start).Round(time.Millisecond))

	if k.widgetCRD {
		// ensureWidgetCRD only needs the harness's test and clients.
		(&harness{t: t, cs: cs, dyn: dyn}).ensureWidgetCRD()
	}
	// After the CRD: the mapper discovers lazily, once.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))

	// 2. Move everything to a namespace and names of this run's own.
	id := fmt.Sprintf("deploy-%d-%s", deploySeq.Add(1), utilrand.String(5))
	ns := id
	mappings := deployRewrite(t, mapper, objs, renderedNS, ns, "-"+id)
	t.Logf("namespace %s (rendered: %s), cluster-scoped names suffixed -%s", ns, renderedNS, id)

	deployCleanup(t, cs, dyn, objs, mappings, ns, deployDryRun)

	// The namespaced overlay deploys into an existing namespace; create it
	// as the base creates its own (Pod Security "restricted"), so the bridge
	// pod template is held to the same standard there.
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" && o.GetName() == ns }) {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create namespace %s (the kustomization expects it to exist): %v", ns, err)
		}
	}

	// 3. Apply, in dependency order.
	applyStart := time.Now()
	deployApply(ctx, t, rc, objs, mappings, deployDryRun)
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("applied %d objects in %v", len(objs), time.Since(applyStart).Round(time.Millisecond))

	// 4. What the bridge is configured to watch, and as whom it runs.
	bridge, cfg, leaseNames := deployBridgeConfig(t, objs, ns)
	if clusterWide != (len(cfg.Namespaces) == 0) {
		t.Fatalf("BRIDGE_NAMESPACES=%q, but this kustomization is expected to watch %s", strings.Join(cfg.Namespaces, ","),
			map[bool]string{true: "all namespaces", false: "its own namespace only"}[clusterWide])
	}
	if !clusterWide && !slices.Equal(cfg.Namespaces, []string{ns}) {
		t.Fatalf("BRIDGE_NAMESPACES=%q, want the bridge's own namespace %s", strings.Join(cfg.Namespaces, ","), ns)
	}

	resolver := informers.NewResolver(memory.NewMemCacheClient(cs.Discovery()))
	type watched struct {
		name       string
		gr         schema.GroupResource
		namespaced bool
		namespaces []string // "" is every namespace
	}
	var configured []watched
	for _, spec := range cfg.Resources {
		r, err := resolver.Resolve(ctx, spec.Name)
		if err != nil {
			t.Errorf("BRIDGE_RESOURCES %q: %v", spec.Name, err)
			continue
		}
		w := watched{name: spec.Name, gr: r.GVR.GroupResource(), namespaced: r.Namespaced, namespaces: spec.Namespaces}
		if len(w.namespaces) == 0 {
			w.namespaces = cfg.Namespaces
		}
		// A namespace written literally moves with the objects.
		for i, n := range w.namespaces {
			if n == renderedNS {
				w.namespaces[i] = ns
			}
		}
		if len(w.namespaces) == 0 || !r.Namespaced {
			w.namespaces = []string{""}
		}
		configured = append(configured, w)
	}
	if t.Failed() {
		t.FailNow()
	}

	// 5. The questions, and the answers the RBAC must give.
	var rows []deployRow
	allow := func(why, ns, verb string, gr schema.GroupResource) {
		rows = append(rows, deployRow{attrs: authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: gr.Group, Resource: gr.Resource}, allowed: true, why: why})
	}
	deny := func(why string, attrs authorizationv1.ResourceAttributes) {
		rows = append(rows, deployRow{attrs: attrs, why: why})
	}
	const otherNS = "default" // a namespace the bridge has no business in
	for _, w := range configured {
		watchedIn := func(n string) bool { return slices.Contains(w.namespaces, "") || slices.Contains(w.namespaces, n) }
		for _, verb := range []string{"list", "watch"} {
			for _, n := range w.namespaces {
				allow("BRIDGE_RESOURCES has "+w.name, n, verb, w.gr)
			}
			if !w.namespaced {
				continue
			}
			// Watched cluster-wide: so in any one namespace as well.
			for _, n := range []string{ns, otherNS} {
				if watchedIn(n) && !slices.Contains(w.namespaces, n) {
					allow("BRIDGE_RESOURCES has "+w.name+" in every namespace", n, verb, w.gr)
				}
			}
			// Watched in some namespaces: nowhere else.
			if !watchedIn("") {
				deny(w.name+" is watched in "+strings.Join(w.namespaces, ",")+" only", authorizationv1.ResourceAttributes{Verb: verb, Group: w.gr.Group, Resource: w.gr.Resource})
				for _, n := range []string{otherNS, "kube-system", ns + "-other"} {
					if !watchedIn(n) {
						deny(w.name+" is watched in "+strings.Join(w.namespaces, ",")+" only", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: w.gr.Group, Resource: w.gr.Resource})
					}
				}
			}
		}
	}
	secrets := schema.GroupResource{Resource: "secrets"}
	if !slices.ContainsFunc(configured, func(w watched) bool { return w.gr == secrets }) {
		for _, n := range []string{ns, "", otherNS} {
			for _, verb := range []string{"get", "list", "watch"} {
				deny("BRIDGE_RESOURCES does not have secrets", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Resource: "secrets"})
			}
		}
		// Not even its own NATS credentials: the kubelet mounts them.
		deny("the NATS credentials are mounted, not read", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "kubebridge-nats"})
	}
	// No writes: to the watched types, nor to ConfigMaps and Secrets.
	writable := []watched{{gr: schema.GroupResource{Resource: "configmaps"}, namespaced: true}, {gr: secrets, namespaced: true}}
	for _, w := range configured {
		if !slices.ContainsFunc(writable, func(x watched) bool { return x.gr == w.gr }) {
			writable = append(writable, w)
		}
	}
	for _, x := range writable {
		nss := []string{""}
		if x.namespaced {
			nss = []string{ns, ""}
		}
		for _, n := range nss {
			for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection", "*"} {
				deny("the bridge writes nothing", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: x.gr.Group, Resource: x.gr.Resource})
			}
		}
	}
	rbacGroup := rbacv1.GroupName
	for _, n := range []string{ns, ""} {
		// No escalation through RBAC.
		for _, res := range []string{"roles", "clusterroles"} {
			if res == "clusterroles" && n != "" {
				continue
			}
			for _, verb := range []string{"escalate", "bind", "create", "update", "patch"} {
				deny("no escalation", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: rbacGroup, Resource: res})
			}
		}
		for _, res := range []string{"rolebindings", "clusterrolebindings"} {
			if res == "clusterrolebindings" && n != "" {
				continue
			}
			for _, verb := range []string{"create", "update", "patch"} {
				deny("no escalation", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: rbacGroup, Resource: res})
			}
		}
		// No impersonation, no tokens of other accounts (nor its own).
		deny("no impersonation", authorizationv1.ResourceAttributes{Namespace: n, Verb: "impersonate", Resource: "serviceaccounts"})
		deny("no tokens", authorizationv1.ResourceAttributes{Namespace: n, Verb: "create", Resource: "serviceaccounts", Subresource: "token"})
		// Nor anything else: pods (and so any ServiceAccount's token), exec,
		// or a wildcard.
		deny("no pods", authorizationv1.ResourceAttributes{Namespace: n, Verb: "create", Resource: "pods"})
		deny("no exec", authorizationv1.ResourceAttributes{Namespace: n, Verb: "create", Resource: "pods", Subresource: "exec"})
		deny("no wildcards", authorizationv1.ResourceAttributes{Namespace: n, Verb: "*", Group: "*", Resource: "*"})
		deny("no wildcards", authorizationv1.ResourceAttributes{Namespace: n, Verb: "list", Group: "*", Resource: "*"})
	}
	deny("no impersonation", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users"})
	deny("no impersonation", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups"})
	deny("no impersonation", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "impersonate", Resource: "serviceaccounts", Name: "default"})
	deny("no tokens", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: bridge.Name})
	// A shard lists namespaces (once, for its apiserver shard selector);
	// nothing else does, and no one watches or reads one.
	if cfg.Shard().Sharded() {
		allow("BRIDGE_SHARDS: the other shards' namespaces", "", "list", schema.GroupResource{Resource: "namespaces"})
	} else {
		deny("not sharded: no namespaces", authorizationv1.ResourceAttributes{Verb: "list", Resource: "namespaces"})
	}
	deny("no namespaces", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "namespaces"})
	deny("no namespaces", authorizationv1.ResourceAttributes{Verb: "create", Resource: "namespaces"})
	deny("no namespaces", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces", Name: ns})

	// Leader election: get, create and update its Lease in its own
	// namespace; nothing more on Leases, nowhere else.
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	if cfg.LeaderElection && cfg.LeaseNamespace != ns {
		t.Errorf("the Lease is in namespace %s, want the bridge's own %s", cfg.LeaseNamespace, ns)
	}
	for _, verb := range []string{"get", "create", "update"} {
		if cfg.LeaderElection {
			allow("BRIDGE_LEADER_ELECTION: its Lease", ns, verb, leases)
		} else {
			deny("leader election is off", authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: leases.Group, Resource: leases.Resource})
		}
		for _, n := range []string{"", otherNS, "kube-system"} {
			deny("Leases only in its own namespace", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: leases.Group, Resource: leases.Resource})
		}
	}
	for _, verb := range []string{"list", "watch", "patch", "delete", "deletecollection", "*"} {
		for _, n := range []string{ns, ""} {
			deny("Leases: get, create and update only", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: leases.Group, Resource: leases.Resource})
		}
	}
	if sh := cfg.Shard(); sh.Sharded() && len(leaseNames) != sh.Count {
		t.Errorf("the pods of %d shards elect leaders on %d Leases (%v), want one per shard", sh.Count, len(leaseNames), leaseNames)
	}
	// The Lease itself, by name (each shard's), as client-go's lock reads
	// and renews it; deleting it (which would hand leadership to anyone)
	// is not allowed, nor the same Lease name elsewhere.
	for _, lease := range leaseNames {
		for _, verb := range []string{"get", "update"} {
			rows = append(rows, deployRow{attrs: authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: leases.Group, Resource: leases.Resource, Name: lease},
				allowed: true, why: "BRIDGE_LEADER_ELECTION: its Lease"})
			for _, n := range []string{otherNS, "kube-system"} {
				deny("Leases only in its own namespace", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: leases.Group, Resource: leases.Resource, Name: lease})
			}
		}
		for _, verb := range []string{"patch", "delete"} {
			deny("Leases: get, create and update only", authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: leases.Group, Resource: leases.Resource, Name: lease})
		}
	}
	// Two replicas and a PodDisruptionBudget: the bridge may neither evict
	// pods (its standby, or anyone's) nor change budgets.
	for _, n := range []string{ns, ""} {
		deny("no evictions", authorizationv1.ResourceAttributes{Namespace: n, Verb: "create", Resource: "pods", Subresource: "eviction"})
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			deny("no disruption budgets", authorizationv1.ResourceAttributes{Namespace: n, Verb: verb, Group: "policy", Resource: "poddisruptionbudgets"})
		}
	}

	// 6. Ask. RBAC reaches the authorizer through informers: wait until
	// every allowed row is allowed before trusting any "denied".
	sarStart := time.Now()
	deployWaitAllowed(t, cs, bridge, rows)
	var nAllowed, nDenied int
	for _, r := range rows {
		res := deploySAR(t, cs, bridge.User, bridge.Groups, r.attrs)
		if res.Allowed != r.allowed {
			t.Errorf("%s: allowed=%v, want %v (%s); reason %q%s", r.describe(bridge.User), res.Allowed, r.allowed, r.why, res.Reason, deployEvalErr(res))
		}
		if r.allowed {
			nAllowed++
			continue
		}
		nDenied++
		// The control account holds every permission: each denied row must
		// be grantable, or the row proves nothing.
		if c := deploySAR(t, cs, control.User, control.Groups, r.attrs); !c.Allowed {
			t.Errorf("control: %s: allowed=false for a cluster-admin (reason %q%s): the question is malformed", r.describe(control.User), c.Reason, deployEvalErr(c))
		}
	}
	t.Logf("%s: %d allowed and %d denied SubjectAccessReviews as expected (%d configured types, watched in %s) in %v; %s in total",
		bridge.User, nAllowed, nDenied, len(configured), deployWhere(cfg.Namespaces), time.Since(sarStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

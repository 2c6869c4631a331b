package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestForbiddenType runs the bridge as a ServiceAccount that may get,
// list and watch ConfigMaps but not Secrets, with both types configured.
// The type it cannot list must not hold back the other: the ConfigMaps'
// start-up snapshot is stored and their live events flow, while /readyz
// fails naming secrets, kubebridge_resource_ready says which type is
// ready, and the log says why (forbidden) without the bridge exiting.
func TestForbiddenType(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"a", "b", "c"} {
		h.createCM(h.ns, name, nil, map[string]string{"k": name})
	}
	if _, err := h.cs.CoreV1().Secrets(h.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := h.limitedAccount(ctx, "bridge-cm-only", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
	b := h.launchBridge(map[string]string{"KUBECONFIG": kubeconfig, "BRIDGE_RESOURCES": "configmaps; secrets"})

	cmType, secType := h.cmType(), h.typeSubject("", "v1", "secrets")
	msgs := h.waitStream("the configmaps' start-up snapshot", readyTimeout, func(m []replay.Message) string {
		if len(ofType(m, contract.TypeSnapshotEnd, cmType+".")) == 0 {
			return "no end marker for configmaps"
		}
		return ""
	})
	ends := checkSnapshots(t, msgs)
	if ends[cmType] != 1 || len(ofType(msgs, contract.TypeSnapshotItem, cmType+".")) != 3 {
		t.Errorf("want one configmaps snapshot of 3 items:\n%s", describe(msgs))
	}
	// Live events of the allowed type flow too.
	late := h.createCM(h.ns, "late", nil, map[string]string{"k": "late"})
	h.waitEvent(h.cmSubject(h.ns, "late"), contract.TypeAdded, late.ResourceVersion)

	code, body, err := b.get("/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "secrets") {
		t.Errorf("/readyz: HTTP %d %q; want 503 naming secrets", code, strings.TrimSpace(body))
	} else {
		t.Logf("/readyz: HTTP %d %q", code, strings.TrimSpace(body))
	}
	m := b.scrape()
	for resource, want := range map[string]float64{"configmaps.v1": 1, "secrets.v1": 0} {
		if !m.has("kubebridge_resource_ready", "resource", resource) {
			t.Errorf("kubebridge_resource_ready{resource=%q} is not exported", resource)
		} else if got := m.sum("kubebridge_resource_ready", "resource", resource); got != want {
			t.Errorf("kubebridge_resource_ready{resource=%q} = %v, want %v", resource, got, want)
		}
	}
	var why []string
	for _, l := range lines(b.output()) {
		// The apiserver's reason, as client-go reports it: `secrets is
		// forbidden: User "..." cannot list resource "secrets"`. (The
		// test's own subject prefix contains "forbidden" too.)
		if strings.Contains(l, "secrets is forbidden") {
			why = append(why, l)
		}
	}
	if len(why) == 0 {
		t.Errorf("the bridge did not log that listing secrets is forbidden")
	} else {
		t.Logf("the log says why: %s", why[0])
	}
	if b.exited() {
		t.Fatalf("the bridge exited: %v", b.state)
	}
	msgs = h.mustRead()
	if got := ofType(msgs, contract.TypeSnapshotBegin, secType+"."); len(got) > 0 {
		t.Errorf("a secrets snapshot began although the bridge cannot list secrets:\n%s", describe(got))
	}
	checkUniqueIDs(t, msgs)
	b.stop()
}

// limitedAccount creates a ServiceAccount in the harness namespace bound
// to a Role with rules, waits until the authorizer applies the binding,
// and returns the path of a kubeconfig with a token for it (TokenRequest:
// no controller-manager runs to create token Secrets). A control request
// makes sure secrets really are forbidden to it.
func (h *harness) limitedAccount(ctx context.Context, name string, rules ...rbacv1.PolicyRule) string {
	h.t.Helper()
	cs := h.cs
	if _, err := cs.CoreV1().ServiceAccounts(h.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(h.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(h.ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: h.ns}},
	}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(h.ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("TokenRequest for %s: %v", name, err)
	}
	token := tr.Status.Token

	// As that account: configmaps become listable once the RBAC cache
	// has the binding; secrets stay forbidden.
	rc := h.env.RESTConfig()
	rc.BearerToken = token
	as, err := kubernetes.NewForConfig(rest.CopyConfig(rc))
	if err != nil {
		h.t.Fatal(err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = as.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{Limit: 1})
		if last != nil && !apierrors.IsForbidden(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		h.t.Fatalf("list configmaps as %s: %v (last: %v)", name, err, last)
	}
	if _, err := as.CoreV1().Secrets(h.ns).List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		h.t.Fatalf("list secrets as %s: %v, want forbidden", name, err)
	}

	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "limited",
		"clusters": []map[string]any{{"name": "testenv", "cluster": map[string]any{"server": h.env.APIServerURL(), "certificate-authority": h.env.CAFile()}}},
		"users":    []map[string]any{{"name": name, "user": map[string]any{"token": token}}},
		"contexts": []map[string]any{{"name": "limited", "context": map[string]any{"cluster": "testenv", "user": name}}},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(h.t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path
}

package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

func clientset(t *testing.T, env *testenv.Env) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func newNamespace(ctx context.Context, t *testing.T, env *testenv.Env) string {
	t.Helper()
	ns, err := clientset(t, env).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "monitoring-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// startChurn creates and keeps changing ConfigMaps in ns until the
// returned func is called.
func startChurn(ctx context.Context, t *testing.T, env *testenv.Env, ns string) func() {
	t.Helper()
	cs := clientset(t, env)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("cm-%d", i%20)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				_, _ = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			}
			// The churn's pace, ten changes a second: not a wait.
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// limitedKubeconfig is a kubeconfig for a ServiceAccount that may list and
// watch ConfigMaps in ns, and nothing else (no Secrets).
func limitedKubeconfig(ctx context.Context, t *testing.T, env *testenv.Env, ns string) string {
	t.Helper()
	cs := clientset(t, env)
	const name = "bridge-configmaps-only"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(err)
	_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
	must(err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}, metav1.CreateOptions{})
	must(err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	must(err)
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "sa",
		"clusters": []map[string]any{{"name": "sa", "cluster": map[string]any{"server": env.APIServerURL(), "certificate-authority": env.CAFile()}}},
		"users":    []map[string]any{{"name": "sa", "user": map[string]any{"token": tr.Status.Token}}},
		"contexts": []map[string]any{{"name": "sa", "context": map[string]any{"cluster": "sa", "user": "sa"}}},
	}
	b, err := json.Marshal(cfg)
	must(err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(os.WriteFile(path, b, 0o600))
	// RBAC reaches the authorizer through informers: wait until the
	// account may list ConfigMaps.
	rc := env.RESTConfig()
	rc.BearerToken = tr.Status.Token
	as, err := kubernetes.NewForConfig(rc)
	must(err)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = as.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if last != nil && !apierrors.IsForbidden(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s may not list configmaps in %s after a minute: %v (last: %v)", name, ns, err, last)
	}
	return path
}

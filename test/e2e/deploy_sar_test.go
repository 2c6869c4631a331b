package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// deployRow is one SubjectAccessReview and the answer it must get.
type deployRow struct {
	attrs   authorizationv1.ResourceAttributes
	allowed bool
	why     string
}

func (r deployRow) describe(user string) string {
	res := r.attrs.Resource
	if r.attrs.Subresource != "" {
		res += "/" + r.attrs.Subresource
	}
	if r.attrs.Group != "" {
		res += "." + r.attrs.Group
	}
	if r.attrs.Name != "" {
		res += " " + r.attrs.Name
	}
	where := "cluster-wide"
	if r.attrs.Namespace != "" {
		where = "in namespace " + r.attrs.Namespace
	}
	return fmt.Sprintf("%s: %s %s %s", user, r.attrs.Verb, res, where)
}

func deployWhere(namespaces []string) string {
	if len(namespaces) == 0 {
		return "all namespaces"
	}
	return strings.Join(namespaces, ",")
}

func deployEvalErr(res authorizationv1.SubjectAccessReviewStatus) string {
	if res.EvaluationError == "" {
		return ""
	}
	return fmt.Sprintf(", evaluation error %q", res.EvaluationError)
}

// deployIdentity is a user as the apiserver authenticates it.
type deployIdentity struct {
	Name   string // the ServiceAccount's name
	User   string
	Groups []string
}

// deployServiceAccount is how the apiserver authenticates ServiceAccount
// ns/name.
func deployServiceAccount(ns, name string) deployIdentity {
	return deployIdentity{
		Name:   name,
		User:   "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
}

// deploySAR asks whether user may do attrs.
func deploySAR(t *testing.T, cs kubernetes.Interface, user string, groups []string, attrs authorizationv1.ResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups, ResourceAttributes: &attrs,
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview for %s %+v: %v", user, attrs, err)
	}
	return sar.Status
}

// deployWaitAllowed polls until every row that must be allowed is, for at
// most deployRBACTimeout; the rows that stay denied then fail in the
// caller's loop.
func deployWaitAllowed(t *testing.T, cs kubernetes.Interface, who deployIdentity, rows []deployRow) {
	t.Helper()
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, deployRBACTimeout, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(rows, func(r deployRow) bool {
			return r.allowed && !deploySAR(t, cs, who.User, who.Groups, r.attrs).Allowed
		}), nil
	})
}

// deployControlAccount creates a ServiceAccount bound to cluster-admin in a
// namespace of its own and waits until the authorizer knows the binding.
func deployControlAccount(t *testing.T, cs kubernetes.Interface) deployIdentity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := fmt.Sprintf("deploy-control-%s", utilrand.String(5))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("control: create namespace: %v", err)
	}
	crb := "kubebridge-e2e-control-" + ns
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, crb, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: delete ClusterRoleBinding %s: %v", crb, err)
		}
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	id := deployServiceAccount(ns, "control")
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: id.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("control: create ServiceAccount: %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: crb},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: id.Name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("control: create ClusterRoleBinding: %v", err)
	}
	probe := authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Resource: "secrets"}
	var res authorizationv1.SubjectAccessReviewStatus
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, deployRBACTimeout, true, func(context.Context) (bool, error) {
		res = deploySAR(t, cs, id.User, id.Groups, probe)
		return res.Allowed, nil
	})
	if err != nil {
		t.Fatalf("control: %s, bound to cluster-admin, may not create secrets after %v (reason %q%s)", id.User, deployRBACTimeout, res.Reason, deployEvalErr(res))
	}
	t.Logf("control: %s (cluster-admin) may create secrets: denied answers below are meaningful", id.User)
	return id
}

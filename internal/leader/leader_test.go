package leader_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebridge/kubebridge/internal/leader"
)

const long = 30 * time.Second

func cfg(id string) leader.Config {
	return leader.Config{Namespace: "ns", Name: "kubebridge-test", Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
}

func waitTerm(t *testing.T, e *leader.Elector) leader.Term {
	t.Helper()
	select {
	case term := <-e.Leading():
		return term
	case <-time.After(long):
		t.Fatalf("%s did not lead within %v", e.Identity(), long)
		return leader.Term{}
	}
}

// A leader that stops releases the Lease; the standby takes it and learns
// its predecessor.
func TestStopReleasesToStandby(t *testing.T) {
	cs := fake.NewClientset()
	ctx := context.Background()
	a, err := leader.Start(ctx, cs.CoordinationV1(), cfg("a"))
	if err != nil {
		t.Fatal(err)
	}
	waitTerm(t, a)
	b, err := leader.Start(ctx, cs.CoordinationV1(), cfg("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Stop(ctx) }()
	select {
	case <-b.Leading():
		t.Fatal("b leads while a holds the Lease")
	case <-time.After(300 * time.Millisecond):
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Deposed():
		t.Error("a stopped on purpose but reports being deposed")
	default:
	}
	term := waitTerm(t, b)
	if term.PreviousHolder != "" && term.PreviousHolder != "a" {
		t.Errorf("previous holder %q, want a (or released)", term.PreviousHolder)
	}
	l, err := cs.CoordinationV1().Leases("ns").Get(ctx, "kubebridge-test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "b" {
		t.Errorf("holder %q, want b", *l.Spec.HolderIdentity)
	}
}

// A leader whose renewals fail is deposed once the renew deadline passes.
// Holds stays nil while the Lease is renewed, for longer than the renew
// deadline, and reports the Lease stale at the latest when the elector
// deposes this replica.
func TestRenewFailureDeposes(t *testing.T) {
	cs := fake.NewClientset()
	var failing atomic.Bool
	cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		return false, nil, nil
	})
	ctx := context.Background()
	// Deadlines a renewal that succeeds meets even on a machine loaded to
	// the point where the race detector's goroutines wait a second for a
	// core: at cfg's 1s, one renewal 1.135s late failed the test (a load
	// average of 11 on 2 cores).
	c := cfg("a")
	c.LeaseDuration, c.RenewDeadline = 8*time.Second, 4*time.Second
	a, err := leader.Start(ctx, cs.CoordinationV1(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Stop(ctx) }()
	waitTerm(t, a)
	// For one and a half renew deadlines, a span of time the test
	// observes, Holds stays nil: the poll ends only at its timeout.
	var held error
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 3*c.RenewDeadline/2, true, func(context.Context) (bool, error) {
		held = a.Holds()
		return held != nil, nil
	})
	if held != nil {
		t.Fatalf("Holds while the Lease is renewed: %v", held)
	}
	failing.Store(true)
	select {
	case <-a.Deposed():
	case <-time.After(long):
		t.Fatalf("not deposed within %v of failing renewals", long)
	}
	if err := a.Holds(); !errors.Is(err, leader.ErrLeaseStale) {
		t.Errorf("Holds after the elector deposed this replica: %v, want ErrLeaseStale", err)
	}
}

// A replica whose elector is stuck (a renewal that never returns: a
// frozen process looks the same to its other goroutines when it thaws)
// is not deposed by client-go, but Holds reports the Lease stale once the
// renew deadline has passed.
func TestHoldsWithoutTheElector(t *testing.T) {
	cs := fake.NewClientset()
	var stuck atomic.Bool
	release := make(chan struct{})
	defer close(release)
	cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if stuck.Load() {
			<-release
			return true, nil, errors.New("released")
		}
		return false, nil, nil
	})
	ctx := context.Background()
	a, err := leader.Start(ctx, cs.CoordinationV1(), cfg("a"))
	if err != nil {
		t.Fatal(err)
	}
	waitTerm(t, a)
	stuck.Store(true)
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, long, true, func(context.Context) (bool, error) {
		return a.Holds() != nil, nil
	})
	if err != nil {
		t.Fatalf("Holds still nil %v after the renewals got stuck", long)
	}
	select {
	case <-a.Deposed():
		t.Fatal("deposed by a stuck elector: this test does not test Holds alone")
	default:
	}
	if err := a.Holds(); !errors.Is(err, leader.ErrLeaseStale) {
		t.Errorf("Holds = %v, want ErrLeaseStale", err)
	}
}

func TestIdentity(t *testing.T) {
	pod := func(k string) (string, bool) { return map[string]string{"POD_NAME": "bridge-0"}[k], k == "POD_NAME" }
	a, b := leader.Identity(pod), leader.Identity(pod)
	if a == b || len(a) != len("bridge-0_")+8 || a[:9] != "bridge-0_" {
		t.Errorf("identities %q, %q: want bridge-0_<8 hex>, different", a, b)
	}
	if h := leader.Identity(func(string) (string, bool) { return "", false }); h == "" || h[0] == '_' {
		t.Errorf("without POD_NAME: %q", h)
	}
}

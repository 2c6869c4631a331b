package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config names the Lease and its timing.
type Config struct {
	Namespace, Name string
	// Identity is this replica's holder identity; see Identity.
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Term is one time this replica leads.
type Term struct {
	// Acquired is when the Lease was taken.
	Acquired time.Time
	// PreviousHolder is the holder the Lease showed before, if any, and
	// PreviousRenew its last renewal: the previous leader died or stopped
	// at most a retry period after it.
	PreviousHolder string
	PreviousRenew  time.Time
}

// Identity is POD_NAME, else the host name, with a random suffix, so that
// a restarted pod of the same name is a new holder.
func Identity(lookup func(string) (string, bool)) string {
	name, ok := lookup("POD_NAME")
	if !ok || name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "kubebridge"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "_" + hex.EncodeToString(b)
}

// Elector runs one replica's election. Its methods are safe for concurrent
// use.
type Elector struct {
	cfg    Config
	leases coordinationv1client.LeasesGetter
	lock   *recordingLock

	leading chan Term
	deposed chan struct{}
	// stopping is set before the elector's context is cancelled on
	// purpose, so that the end of the term is not taken for a deposition.
	stopping  atomic.Bool
	started   atomic.Bool
	cancel    context.CancelFunc
	done      chan struct{}
	onDeposed sync.Once
}

// Start begins campaigning for the Lease in the background. It runs until
// Stop is called or the Lease is lost: the context only carries the
// logger, so a signal does not give up the Lease while the replica still
// drains its publishes.
func Start(ctx context.Context, leases coordinationv1client.LeasesGetter, cfg Config) (*Elector, error) {
	e := &Elector{cfg: cfg, leases: leases, leading: make(chan Term, 1), deposed: make(chan struct{}), done: make(chan struct{})}
	e.lock = &recordingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          e.lock,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Name:          cfg.Namespace + "/" + cfg.Name,
		// The Lease is released by Stop, after publishing has ended, never
		// by the elector itself: its release would run before the deposed
		// callback and delay it by up to the renew deadline.
		ReleaseOnCancel: false,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				e.started.Store(true)
				prev := e.lock.previous()
				e.leading <- Term{Acquired: time.Now(), PreviousHolder: prev.HolderIdentity, PreviousRenew: prev.RenewTime.Time}
			},
			OnStoppedLeading: func() {
				if e.started.Load() && !e.stopping.Load() {
					e.onDeposed.Do(func() { close(e.deposed) })
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go func() { defer close(e.done); le.Run(runCtx) }()
	return e, nil
}

// Leading receives the term once this replica holds the Lease.
func (e *Elector) Leading() <-chan Term { return e.leading }

// Deposed is closed when this replica led and lost the Lease: its renewal
// failed for the renew deadline, or another holder took it.
func (e *Elector) Deposed() <-chan struct{} { return e.deposed }

// Identity is this replica's holder identity.
func (e *Elector) Identity() string { return e.cfg.Identity }

// ErrLeaseStale is returned by Holds once this replica's last successful
// write of the Lease is older than client-go's elector would let it lead.
var ErrLeaseStale = errors.New("the leader Lease was not renewed in time: a standby may hold it by now")

// Holds returns nil while this replica may still take itself for the
// leader: its last successful write of the Lease was sent less than the
// retry period plus the renew deadline ago, which is when client-go's
// elector, renewing every retry period and giving up after the renew
// deadline, deposes it at the latest. The elector only does so when its
// renew loop runs; a process frozen past the Lease (a stopped VM, SIGSTOP,
// a long pause) runs its other goroutines first when it thaws, and Holds
// tells them at once. Counting from the request's sending, on the
// monotonic clock, keeps a margin before a standby may take over, one
// lease duration after it saw that write. Where the retry period plus the
// renew deadline is not shorter than the lease duration, the renew
// deadline alone counts.
func (e *Elector) Holds() error {
	written := e.lock.lastWritten()
	if written.IsZero() {
		return fmt.Errorf("%w: never written", ErrLeaseStale)
	}
	limit := e.cfg.RenewDeadline + e.cfg.RetryPeriod
	if limit >= e.cfg.LeaseDuration {
		limit = e.cfg.RenewDeadline
	}
	if age := time.Since(written); age >= limit {
		return fmt.Errorf("%w: last written %v ago, limit %v", ErrLeaseStale, age.Round(time.Millisecond), limit)
	}
	return nil
}

// Stop ends the campaign. A replica that leads calls it only once it
// publishes nothing more: the Lease is then released, so that a standby
// takes over without waiting for it to expire.
func (e *Elector) Stop(ctx context.Context) error {
	e.stopping.Store(true)
	e.cancel()
	<-e.done
	select {
	case <-e.deposed:
		return nil
	default:
	}
	if !e.started.Load() {
		return nil
	}
	return e.release(ctx)
}

// release empties the holder of the Lease if this replica still holds it,
// as client-go's ReleaseOnCancel does.
func (e *Elector) release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	leases := e.leases.Leases(e.cfg.Namespace)
	l, err := leases.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.cfg.Identity {
		return nil
	}
	now := metav1.NewMicroTime(time.Now())
	one := int32(1)
	l.Spec = coordinationv1.LeaseSpec{AcquireTime: &now, RenewTime: &now, LeaseDurationSeconds: &one, LeaseTransitions: l.Spec.LeaseTransitions}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	klog.FromContext(ctx).Info("Released the Lease", "lease", e.cfg.Namespace+"/"+e.cfg.Name)
	return nil
}

// ErrDeposed is returned by a replica that stopped because it lost the
// Lease.
var ErrDeposed = errors.New("lost the leader Lease: stopped publishing at once; exiting so that this replica restarts as a standby")

// recordingLock remembers the last record held by another identity, so
// that a new leader can tell when its predecessor last renewed, and when
// this replica last wrote the Lease successfully.
type recordingLock struct {
	resourcelock.Interface
	mu   sync.Mutex
	prev resourcelock.LeaderElectionRecord
	// written is when the last successful Create or Update of the Lease
	// was sent (its monotonic reading: a frozen process's clock runs on).
	written time.Time
}

func (l *recordingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, r)
	l.wrote(sent, err)
	return err
}

func (l *recordingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Update(ctx, r)
	l.wrote(sent, err)
	return err
}

func (l *recordingLock) wrote(sent time.Time, err error) {
	if err != nil {
		return
	}
	l.mu.Lock()
	if sent.After(l.written) {
		l.written = sent
	}
	l.mu.Unlock()
}

func (l *recordingLock) lastWritten() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

func (l *recordingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err == nil && r != nil && r.HolderIdentity != l.Identity() {
		l.mu.Lock()
		l.prev = *r
		l.mu.Unlock()
	}
	return r, raw, err
}

func (l *recordingLock) previous() resourcelock.LeaderElectionRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prev
}

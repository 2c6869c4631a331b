package bridge

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/leader"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// gate hands changes to the intake only while open. A standby keeps its
// informers synced but accumulates nothing: once it leads, it publishes the
// deletes it missed and a full snapshot before any live change anyway.
type gate struct {
	open atomic.Bool
	next intakeQueue
}

func (g *gate) Add(c informers.Change) {
	if g.open.Load() {
		g.next.Add(c)
	}
}

func (g *gate) Withhold(c informers.Change) {
	if g.open.Load() {
		g.next.Withhold(c)
	}
}

// campaign runs this replica as a standby until it holds the Lease. It
// returns a nil term, and stops campaigning, when ctx ends first.
func (b *Bridge) campaign(ctx context.Context, lm metrics.Leadership) (*leader.Elector, *leader.Term, error) {
	logger := klog.FromContext(ctx)
	cfg, sources, statuses := b.cfg, b.sources, b.statuses
	b.standby.Store(true)
	lm.Leader.Set(0)
	el, err := leader.Start(ctx, b.kube.Clients.Typed.CoordinationV1(), leader.Config{
		Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName, Identity: leader.Identity(os.LookupEnv),
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.LeaseRenewDeadline, RetryPeriod: cfg.LeaseRetryPeriod})
	if err != nil {
		return nil, nil, err
	}
	logger.Info("Leader election on: standby until this replica holds the Lease", "lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", el.Identity(),
		"leaseDuration", cfg.LeaseDuration, "renewDeadline", cfg.LeaseRenewDeadline, "retryPeriod", cfg.LeaseRetryPeriod)
	go func() {
		for i, src := range sources {
			for !src.HasSynced() {
				if !sleep(ctx, 50*time.Millisecond) {
					return
				}
			}
			statuses[i].setSynced()
		}
		logger.Info("Standby: informer caches synced; ready, publishing nothing until this replica holds the Lease")
	}()
	select {
	case term := <-el.Leading():
		lm.Leader.Set(1)
		lm.Transitions.Inc()
		b.standby.Store(false)
		kv := []any{"identity", el.Identity()}
		if term.PreviousHolder != "" {
			kv = append(kv, "previousLeader", term.PreviousHolder, "sincePreviousRenewal", term.Acquired.Sub(term.PreviousRenew).Round(time.Millisecond))
		}
		logger.Info("Leading: took the Lease; publishing missed deletes, start-up snapshots, then live changes", kv...)
		return el, &term, nil
	case <-ctx.Done():
		if err := el.Stop(klog.NewContext(context.Background(), logger)); err != nil {
			logger.Info("Leader election did not stop cleanly", "err", err)
		}
		return nil, nil, nil
	}
}

// logFirstEvent logs, once, how long after taking the Lease (and after the
// previous leader's last renewal) the first event was acknowledged: the
// failover time.
func logFirstEvent(ctx context.Context, term *leader.Term, published func() bool) {
	logger := klog.FromContext(ctx)
	for !published() {
		if !sleep(ctx, 5*time.Millisecond) {
			return
		}
	}
	now := time.Now()
	kv := []any{"sinceLeaseTaken", now.Sub(term.Acquired).Round(time.Millisecond)}
	if !term.PreviousRenew.IsZero() {
		kv = append(kv, "sincePreviousLeaderRenewal", now.Sub(term.PreviousRenew).Round(time.Millisecond))
	}
	logger.Info("First event published as leader", kv...)
}

// standbyReadiness is readiness for a standby: every type's cache synced
// and NATS connected; it publishes no snapshot until it leads.
func standbyReadiness(types []*typeStatus, resolved, connected bool) error {
	synced := make([]*typeStatus, len(types))
	for i, t := range types {
		s := &typeStatus{resource: t.resource}
		s.synced.Store(t.synced.Load())
		s.snapshotted.Store(true)
		synced[i] = s
	}
	return readiness(synced, resolved, connected)
}

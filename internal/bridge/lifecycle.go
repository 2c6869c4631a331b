package bridge

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/kubebridge/kubebridge/internal/leader"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// Run prepares the bridge (discovery, the stream, the informers: see
// prepare), then watches and publishes until ctx ends, then shuts down
// within cfg.ShutdownTimeout. With leader election it waits as a standby
// until this replica holds the Lease, and returns when it loses it.
func (b *Bridge) Run(ctx context.Context) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	lm := b.metrics.Leadership()
	var el *leader.Elector
	var term *leader.Term
	if b.cfg.LeaderElection {
		b.runSources(ctx)
		var err error
		if el, term, err = b.campaign(ctx, lm); err != nil || term == nil {
			return err
		}
		b.gated.open.Store(true)
	}
	lm.Leader.Set(1)
	// lead ends what this replica publishes when ctx ends or, at once,
	// when it loses the Lease.
	lead, cancelLead := context.WithCancel(ctx)
	defer cancelLead()

	// hard ends publishing: at the shutdown deadline, not at the signal.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	var deposed <-chan struct{}
	termData := contract.TermData{Holder: leader.Identity(os.LookupEnv)}
	if el != nil {
		deposed = el.Deposed()
		termData = contract.TermData{Holder: el.Identity(), PreviousHolder: term.PreviousHolder}
	}
	var holds func() error
	if el != nil {
		holds = el.Holds
	}
	fence, err := startTerm(lead, b.js, b.stream, newEncoder(b.cfg, b.subjects, b.info, 0), termData, b.opts.now(), 200*time.Millisecond, holds)
	if err != nil {
		if ctx.Err() != nil || isClosed(deposed) {
			return endTerm(ctx, el, lm, nil, nil)
		}
		return err
	}
	if el != nil {
		// A leader frozen past its Lease runs its publishers before its
		// elector when it thaws: they ask the Lease first.
		fence.Guard(el.Holds)
	}
	lm.Term.Set(float64(fence.Term()))
	b.metrics.FenceRefusals(fence.Overwrote, fence.Adopted, fence.Foreign)
	go func() {
		select {
		case <-deposed:
		case <-fence.Fenced():
		case <-hard.Done():
			return
		}
		// Nothing this replica still holds may reach the stream:
		// publishing ends now, without the drain.
		cancelHard()
		cancelLead()
	}()
	var wg sync.WaitGroup
	pb, err := startPublishing(lead, hard, &wg, b.cfg, b.intake, publishingDeps{js: b.js, acks: b.acks, encoder: b.eventEncoder(fence.Term()), metrics: b.metrics,
		maxPayload: b.limits.maxPayload, rereadLimits: func() { b.limits.reread(hard) }, fence: fence})
	if err != nil {
		return err
	}
	stop := func() { shutdown(ctx, b.cfg, cancelHard, &wg, pb) }
	live := newLiveness(b.opts.stuckAfter)
	liveCheck := func() error {
		return live.check(b.nc.IsConnected(), b.intake.Publishable()+pb.pub.InFlight(), pb.pub.LastActivity())
	}
	b.live.Store(&liveCheck)

	if el == nil {
		b.runSources(ctx)
	} else {
		go logFirstEvent(lead, term, func() bool { return metrics.Total(b.metrics.EventsPublished) > 0 })
	}
	b.startSnapshotters(lead, &wg, pb, &reconciler{tail: sink.Tail{Stream: b.stream}, subjects: b.subjects, owns: shard.Owner(b.subjects.Shard), seen: fence.Observe})

	<-lead.Done()
	if isClosed(deposed) || isClosed(fence.Fenced()) {
		cancelHard()
		wg.Wait()
	}
	return endTerm(ctx, el, lm, fence, stop)
}

func (b *Bridge) runSources(ctx context.Context) {
	for _, src := range b.sources {
		src.Run(ctx)
	}
	if b.selectors != nil && b.kube.Clients.Typed != nil && b.cfg.ShardSelectorRefresh > 0 {
		synced := func() bool {
			for _, src := range b.sources {
				if !src.HasSynced() {
					return false
				}
			}
			return true
		}
		go b.selectors.run(ctx, b.cfg.ShardSelectorRefresh, synced)
	}
}

// startSnapshotters starts one snapshotter per type. Each type snapshots
// as soon as its own cache has synced, so one that cannot be listed holds
// up nobody else.
func (b *Bridge) startSnapshotters(ctx context.Context, wg *sync.WaitGroup, pb *publishing, rec *reconciler) {
	ids := newSnapshotIDs(b.opts.now())
	for i, src := range b.sources {
		var cache syncedCache = src
		if g := b.ruleGates[i]; g != nil {
			cache = matchingCache{syncedCache: src, gate: g}
		}
		s := &snapshotter{res: src.Resource, scope: src.Scope, src: cache, intake: b.intake, markers: pb.markers, ids: ids, period: b.cfg.ResyncPeriod, metrics: b.metrics, status: b.statuses[i],
			minBackoff: time.Second, maxBackoff: time.Minute, syncLogEvery: 30 * time.Second,
			missedDeletes: func(ctx context.Context) ([]informers.Change, error) {
				return rec.missedDeletes(ctx, src.Resource, src.Scope, cache, b.opts.now())
			}}
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
}

// ready is the bridge's readiness: as a standby, every type's cache synced;
// as the leader, every type's start-up snapshot stored; NATS connected.
func (b *Bridge) ready() error {
	if b.standby.Load() {
		return standbyReadiness(b.statuses, true, b.nc.IsConnected())
	}
	return readiness(b.statuses, true, b.nc.IsConnected())
}

// alive is the current term's liveness check; a standby is alive.
func (b *Bridge) alive() error {
	if f := b.live.Load(); f != nil {
		return (*f)()
	}
	return nil
}

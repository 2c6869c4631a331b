package bridge

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/leader"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// Option adjusts Serve for tests and benchmarks.
type Option func(*serveOptions)

type serveOptions struct {
	now        func() time.Time
	ready      func()
	listening  func(net.Addr)
	stuckAfter time.Duration
	health     *health
}

// WithReady is called once every start-up snapshot is stored.
func WithReady(f func()) Option { return func(o *serveOptions) { o.ready = f } }

// WithListening is called with the address of the operational endpoints.
func WithListening(f func(net.Addr)) Option { return func(o *serveOptions) { o.listening = f } }

// withHealth makes Serve report through h, whose endpoints Run serves.
func withHealth(h *health) Option { return func(o *serveOptions) { o.health = h } }

// Serve runs informers for the configured types and publishes their
// changes and snapshots on nc's JetStream until ctx ends, then shuts down
// within cfg.ShutdownTimeout.
func Serve(ctx context.Context, cfg *config.Config, kube Kube, nc *nats.Conn, opts ...Option) error {
	o := serveOptions{now: time.Now, ready: func() {}, listening: func(net.Addr) {}, stuckAfter: 2 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	logger := klog.FromContext(ctx)

	watches, err := resolveWatches(ctx, cfg, informers.NewResolver(kube.Discovery))
	if err != nil {
		return err
	}

	jsOpts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncMaxPending(2 * cfg.PublishWindow), jetstream.WithPublishAsyncTimeout(cfg.PublishAckTimeout)}
	var js jetstream.JetStream
	if cfg.NATSJSDomain != "" {
		// The API of another domain's JetStream (a leaf node's hub); the
		// publishes themselves go to the stream's subjects as ever.
		js, err = jetstream.NewWithDomain(nc, cfg.NATSJSDomain, jsOpts...)
	} else {
		js, err = jetstream.New(nc, jsOpts...)
	}
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	h := o.health
	serveHTTP := h == nil
	if serveHTTP {
		h = newHealth()
	}
	h.conn.Store(nc)
	m := h.metrics
	info, err := ensureStream(ctx, js, cfg, subjects, func(error) { m.JetStreamWaits.Inc() })
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, info.Config.Name)
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", info.Config.Name, err)
	}
	rec := &reconciler{tail: sink.Tail{Stream: stream}, subjects: subjects}
	limits := newStreamLimits(nc, js, info)
	logger.Info("JetStream stream ready", "stream", info.Config.Name, "subjects", strings.Join(info.Config.Subjects, ","), "maxPayload", limits.maxPayload())

	m.NATSConnected(nc.IsConnected)
	in := newIntake(o.now, intakeReports{
		coalesced: func(r *informers.Resource, n int) { m.ChangesCoalesced.WithLabelValues(r.String()).Add(float64(n)) },
		unkeyed: func(c informers.Change, err error) {
			m.Unpublishable.WithLabelValues(c.Resource.String()).Inc()
			logger.Error(err, "A change without a cache key cannot be published", "resource", c.Resource.String(), "verb", c.Verb)
		},
	})
	var queue informers.Queue = in
	var gated *gate
	if cfg.LeaderElection {
		gated = &gate{next: in}
		queue = gated
	}
	transform := informers.TransformOptions{StripManagedFields: cfg.StripManagedFields, StripLastApplied: cfg.StripLastApplied, RedactSecrets: cfg.RedactSecrets}.Transform()
	var sources []*informers.Source
	for _, w := range watches {
		src, err := informers.NewSource(kube.Clients, w.resource, w.scope, transform, queue,
			informers.WithClock(o.now), informers.WithObserver(sourceObserver{m}))
		if err != nil {
			return err
		}
		logger.Info("Watching", "resource", w.resource.String(), "kind", w.resource.Kind, "as", w.names, "namespaces", w.scope.Namespaces,
			"labels", w.scope.LabelSelector, "fields", w.scope.FieldSelector, "typed", src.Typed, "subjects", subjects.TypeWildcard(w.resource.Type()))
		sources = append(sources, src)
	}
	// Nothing of a type is published before its missed-delete scan: see
	// intake.hold. Its snapshotter releases it.
	for _, src := range sources {
		in.hold(src.Resource)
	}
	allReady := readyWhenAll(len(sources), func() {
		logger.Info("Start-up snapshots published; the stream holds the current state of every watched type")
		o.ready()
	})
	statuses := make([]*typeStatus, len(sources))
	for i, src := range sources {
		statuses[i] = newTypeStatus(src.Resource.String(), m, allReady)
	}
	h.types.Store(&statuses)

	lm := m.Leadership()
	var el *leader.Elector
	var term *leader.Term
	if cfg.LeaderElection {
		for _, src := range sources {
			src.Run(ctx)
		}
		if el, term, err = campaign(ctx, cfg, kube, h, sources, statuses, lm); err != nil || term == nil {
			return err
		}
		gated.open.Store(true)
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
	enc := newEncoder(cfg, subjects, info)
	fence, err := startTerm(lead, js, stream, enc, termData, o.now(), 200*time.Millisecond)
	if err != nil {
		if ctx.Err() != nil || isClosed(deposed) {
			return endTerm(ctx, el, lm, nil, nil)
		}
		return err
	}
	lm.Term.Set(float64(fence.Term()))
	m.FenceRefusals(fence.Overwrote, fence.Adopted, fence.Foreign)
	rec.seen = fence.Observe
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
	live := newLiveness(o.stuckAfter)
	var wg sync.WaitGroup
	pb, err := startPublishing(lead, hard, &wg, cfg, in, publishingDeps{js: js, encoder: enc, metrics: m,
		maxPayload: limits.maxPayload, rereadLimits: func() { limits.reread(hard) }, fence: fence})
	if err != nil {
		return err
	}
	stop := func() { shutdown(ctx, cfg, cancelHard, &wg, pb) }

	liveCheck := func() error {
		return live.check(nc.IsConnected(), in.publishable()+pb.pub.InFlight(), pb.pub.LastActivity())
	}
	h.live.Store(&liveCheck)
	if serveHTTP && cfg.HTTPAddr != "off" {
		addr, err := metrics.ListenAndServe(ctx, cfg.HTTPAddr, metrics.Handler(m, h.checks()))
		if err != nil {
			cancelHard()
			wg.Wait()
			return err
		}
		logger.Info("Serving /healthz, /readyz and /metrics", "address", addr.String())
		o.listening(addr)
	}

	if el == nil {
		for _, src := range sources {
			src.Run(ctx)
		}
	} else {
		go logFirstEvent(lead, term, func() bool { return metrics.Total(m.EventsPublished) > 0 })
	}
	// Each type snapshots as soon as its own cache has synced, so one that
	// cannot be listed holds up nobody else.
	ids := newSnapshotIDs(o.now())
	for i, src := range sources {
		s := &snapshotter{res: src.Resource, scope: src.Scope, src: src, intake: in, markers: pb.markers, ids: ids, period: cfg.ResyncPeriod, metrics: m, status: statuses[i],
			minBackoff: time.Second, maxBackoff: time.Minute, syncLogEvery: 30 * time.Second,
			missedDeletes: func(ctx context.Context) ([]informers.Change, error) {
				return rec.missedDeletes(ctx, src.Resource, src.Scope, src, o.now())
			}}
		wg.Add(1)
		go func() { defer wg.Done(); s.run(lead) }()
	}

	<-lead.Done()
	if isClosed(deposed) || isClosed(fence.Fenced()) {
		cancelHard()
		wg.Wait()
	}
	return endTerm(ctx, el, lm, fence, stop)
}

// readyWhenAll returns a function that calls f on its n-th call.
func readyWhenAll(n int, f func()) func() {
	var left atomic.Int64
	left.Store(int64(n))
	return func() {
		if left.Add(-1) == 0 {
			f()
		}
	}
}

func encodeWorkers(cfg *config.Config) int {
	if cfg.EncodeWorkers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return cfg.EncodeWorkers
}

// sourceObserver feeds informer observations into the metrics.
type sourceObserver struct{ m *metrics.Metrics }

func (o sourceObserver) Observed(r *informers.Resource, v informers.Verb) {
	o.m.ChangesObserved.WithLabelValues(r.String(), string(v)).Inc()
}
func (o sourceObserver) WatchError(r *informers.Resource, _ error) {
	o.m.WatchErrors.WithLabelValues(r.String()).Inc()
}

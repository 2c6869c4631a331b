package bridge

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Option adjusts New and Serve for tests and benchmarks.
type Option func(*options)

type options struct {
	now        func() time.Time
	ready      func()
	listening  func(net.Addr)
	stuckAfter time.Duration
	health     *health
}

// WithReady is called once every start-up snapshot is stored.
func WithReady(f func()) Option { return func(o *options) { o.ready = f } }

// WithListening is called with the address of the operational endpoints.
func WithListening(f func(net.Addr)) Option { return func(o *options) { o.listening = f } }

// withHealth makes the bridge report through h, whose endpoints may be
// served before the bridge exists (Main serves them before NATS is
// reached).
func withHealth(h *health) Option { return func(o *options) { o.health = h } }

// Bridge is one replica: its informers, intake and stream, built by New and
// run once by Run. What lives only while this replica leads (the term, its
// encoder and fence, the publishing pipeline, the snapshotters) is built
// by Run when it starts to lead.
type Bridge struct {
	cfg      *config.Config
	kube     Kube
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   jetstream.Stream
	info     *jetstream.StreamInfo
	subjects contract.Subjects
	limits   *streamLimits
	metrics  *metrics.Metrics
	intake   *intake.Intake
	// gated is the intake's door while this replica is a standby; nil
	// without leader election.
	gated   *gate
	sources []*informers.Source
	// selectors holds the sources' apiserver shard selector; nil unless
	// sharded.
	selectors *selectorRefresh
	statuses  []*typeStatus
	opts      options

	// standby is set while this replica waits for the Lease.
	standby atomic.Bool
	// live is the liveness check of the current term's pipeline.
	live atomic.Pointer[func() error]
}

// New resolves the configured types, waits for the stream and builds the
// informers and the intake. Nothing is watched or published before Run.
func New(ctx context.Context, cfg *config.Config, kube Kube, nc *nats.Conn, opts ...Option) (*Bridge, error) {
	o := options{now: time.Now, ready: func() {}, listening: func(net.Addr) {}, stuckAfter: 2 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	if o.health == nil {
		o.health = newHealth()
	}
	logger := klog.FromContext(ctx)
	m := o.health.metrics

	watches, err := resolveWatches(ctx, cfg, informers.NewResolver(kube.Discovery))
	if err != nil {
		return nil, err
	}
	js, err := newJetStream(cfg, nc)
	if err != nil {
		return nil, err
	}
	// A shard's subjects name it: its markers and term marker have
	// subjects of their own, and its events carry the shard extension.
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName, Shard: cfg.Shard()}
	info, err := ensureStream(ctx, js, cfg, subjects, func(error) { m.JetStreamWaits.Inc() })
	if err != nil {
		return nil, err
	}
	stream, err := js.Stream(ctx, info.Config.Name)
	if err != nil {
		return nil, fmt.Errorf("jetstream: stream %s: %w", info.Config.Name, err)
	}
	limits := newStreamLimits(nc, js, info)
	logger.Info("JetStream stream ready", "stream", info.Config.Name, "subjects", strings.Join(info.Config.Subjects, ","), "maxPayload", limits.maxPayload())
	m.NATSConnected(nc.IsConnected)

	in := intake.New(o.now, intake.Reports{
		Coalesced: func(r *informers.Resource, n int) { m.ChangesCoalesced.WithLabelValues(r.String()).Add(float64(n)) },
		Unkeyed: func(c informers.Change, err error) {
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
	sourceOpts := []informers.SourceOption{informers.WithClock(o.now), informers.WithObserver(sourceObserver{m})}
	var selectors *selectorRefresh
	if sh := cfg.Shard(); sh.Sharded() {
		// Objects of other shards never reach the cache; with the
		// apiserver's sharded watch, they are not even sent.
		selectors = newSelectorRefresh(ctx, kube, sh)
		sourceOpts = append(sourceOpts, informers.WithOwns(shard.Owner(sh)), informers.WithShardSelector(selectors.selector))
		logger.Info("Sharded: this bridge publishes the namespaces, and the cluster-scoped names, that hash to its shard", "shard", sh.String(),
			"lease", cfg.LeaseName, "termSubject", subjects.Term())
	}
	var sources []*informers.Source
	for _, w := range watches {
		src, err := informers.NewSource(kube.Clients, w.resource, w.scope, transform, queue, sourceOpts...)
		if err != nil {
			return nil, err
		}
		logger.Info("Watching", "resource", w.resource.String(), "kind", w.resource.Kind, "as", w.names, "namespaces", w.scope.Namespaces,
			"labels", w.scope.LabelSelector, "fields", w.scope.FieldSelector, "typed", src.Typed, "subjects", subjects.TypeWildcard(w.resource.Type()))
		sources = append(sources, src)
	}
	// Nothing of a type is published before its missed-delete scan: see
	// intake.Intake.Hold. Its snapshotter releases it.
	for _, src := range sources {
		in.Hold(src.Resource)
	}
	allReady := readyWhenAll(len(sources), func() {
		logger.Info("Start-up snapshots published; the stream holds the current state of every watched type")
		releaseStartupGarbage()
		o.ready()
	})
	statuses := make([]*typeStatus, len(sources))
	for i, src := range sources {
		statuses[i] = newTypeStatus(src.Resource.String(), m, allReady)
	}
	b := &Bridge{cfg: cfg, kube: kube, nc: nc, js: js, stream: stream, info: info, subjects: subjects, limits: limits, metrics: m,
		intake: in, gated: gated, sources: sources, selectors: selectors, statuses: statuses, opts: o}
	o.health.attach(b)
	return b, nil
}

// newJetStream is nc's JetStream, or another domain's (a leaf node's hub):
// the publishes themselves go to the stream's subjects as ever.
func newJetStream(cfg *config.Config, nc *nats.Conn) (jetstream.JetStream, error) {
	jsOpts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncMaxPending(2 * cfg.PublishWindow), jetstream.WithPublishAsyncTimeout(cfg.PublishAckTimeout)}
	var js jetstream.JetStream
	var err error
	if cfg.NATSJSDomain != "" {
		js, err = jetstream.NewWithDomain(nc, cfg.NATSJSDomain, jsOpts...)
	} else {
		js, err = jetstream.New(nc, jsOpts...)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return js, nil
}

// Serve serves the operational endpoints, builds the bridge on nc and runs
// it until ctx ends: Main without its own connections, for tests and for
// programs that hold a NATS connection already.
func Serve(ctx context.Context, cfg *config.Config, kube Kube, nc *nats.Conn, opts ...Option) error {
	o := options{listening: func(net.Addr) {}}
	for _, opt := range opts {
		opt(&o)
	}
	h := o.health
	if h == nil {
		h = newHealth()
	}
	if err := serveEndpoints(ctx, cfg, h, o.listening); err != nil {
		return err
	}
	b, err := New(ctx, cfg, kube, nc, append(opts, withHealth(h))...)
	if err != nil {
		return err
	}
	return b.Run(ctx)
}

// serveEndpoints serves /healthz, /readyz and /metrics on cfg.HTTPAddr
// (none when it is "off") until ctx ends.
func serveEndpoints(ctx context.Context, cfg *config.Config, h *health, listening func(net.Addr)) error {
	if cfg.HTTPAddr == "off" {
		return nil
	}
	addr, err := metrics.ListenAndServe(ctx, cfg.HTTPAddr, metrics.Handler(h.metrics, h.checks(), cfg.PProf))
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Serving /healthz, /readyz and /metrics", "address", addr.String(), "pprof", cfg.PProf)
	if listening != nil {
		listening(addr)
	}
	return nil
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

var _ informers.ForeignObserver = sourceObserver{}

func (o sourceObserver) Observed(r *informers.Resource, v informers.Verb) {
	o.m.ChangesObserved.WithLabelValues(r.String(), string(v)).Inc()
}
func (o sourceObserver) ForeignCounter(r *informers.Resource) func(n int) {
	c := o.m.ForeignObjects.WithLabelValues(r.String())
	return func(n int) { c.Add(float64(n)) }
}
func (o sourceObserver) WatchError(r *informers.Resource, _ error) {
	o.m.WatchErrors.WithLabelValues(r.String()).Inc()
}

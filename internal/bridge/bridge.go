package bridge

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
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

// Bridge is one replica: its informers, intake and stream. New wires it;
// Run prepares it (discovery, the stream, the informers) and runs it, once.
// What lives only while this replica leads (the term, its encoder and
// fence, the publishing pipeline, the snapshotters) is built by Run when
// it starts to lead.
type Bridge struct {
	cfg      *config.Config
	kube     Kube
	nc       *nats.Conn
	js       jetstream.JetStream
	acks     *sink.Acks
	subjects contract.Subjects
	metrics  *metrics.Metrics
	intake   *intake.Intake
	// gated is the intake's door while this replica is a standby; nil
	// without leader election.
	gated *gate
	// queue is where the informers hand their changes: the gate, or the
	// intake itself (a type with rules, through its ruleGate).
	queue intakeQueue
	opts  options

	// Set by prepare, before Run watches anything.
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	limits *streamLimits
	// sources are the informers, one per configured type, and ruleGates
	// their rules (nil for a type without rules that read objects).
	sources   []*informers.Source
	ruleGates []*ruleGate
	// updates says what each type's updates carry (its rules).
	updates map[*informers.Resource]encode.UpdateData
	// selectors holds the sources' apiserver shard selector; nil unless
	// sharded.
	selectors *selectorRefresh
	statuses  []*typeStatus

	// standby is set while this replica waits for the Lease.
	standby atomic.Bool
	// live is the liveness check of the current term's pipeline.
	live atomic.Pointer[func() error]
}

// New wires a bridge from what it is given: the configuration, the API
// server's clients and a NATS connection. It does no I/O: Run first
// resolves the configured types, waits for the stream and builds the
// informers (prepare). Nothing is watched or published before Run.
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
	acks := sink.NewAcks()
	js, err := newJetStream(cfg, nc, acks)
	if err != nil {
		return nil, err
	}
	in := intake.New(o.now, intake.Reports{
		Coalesced: func(r *informers.Resource, n int) { m.ChangesCoalesced.WithLabelValues(r.String()).Add(float64(n)) },
		Unkeyed: func(c informers.Change, err error) {
			m.Unpublishable.WithLabelValues(c.Resource.String()).Inc()
			logger.Error(err, "A change without a cache key cannot be published", "resource", c.Resource.String(), "verb", c.Verb)
		},
	})
	var queue intakeQueue = in
	var gated *gate
	if cfg.LeaderElection {
		gated = &gate{next: in}
		queue = gated
	}
	// A shard's subjects name it: its markers and term marker have
	// subjects of their own, and its events carry the shard extension.
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName, Shard: cfg.Shard()}
	return &Bridge{cfg: cfg, kube: kube, nc: nc, js: js, acks: acks, subjects: subjects, metrics: m, intake: in, gated: gated, queue: queue, opts: o}, nil
}

// newJetStream is nc's JetStream, or another domain's (a leaf node's hub):
// the publishes themselves go to the stream's subjects as ever. Its
// acknowledgements go to acks.
func newJetStream(cfg *config.Config, nc *nats.Conn, acks *sink.Acks) (jetstream.JetStream, error) {
	jsOpts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncMaxPending(2 * cfg.PublishWindow), jetstream.WithPublishAsyncTimeout(cfg.PublishAckTimeout)}
	jsOpts = append(jsOpts, acks.JetStreamOptions()...)
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

package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/natsembed"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// Run runs the bridge until ctx ends: it connects to Kubernetes and NATS
// (starting an embedded NATS server without NATS_URL) and calls Serve.
func Run(ctx context.Context, cfg *config.Config, version string) error {
	logger := klog.FromContext(ctx)
	kube, rc, err := KubeFromConfig(cfg, "kubebridge/"+version)
	if err != nil {
		return err
	}
	logger.Info("Kubernetes API server", "host", rc.Host, "qps", rc.QPS, "burst", rc.Burst)

	// The endpoints come up before NATS is reached, so probes see a live
	// process that is not ready yet instead of a refused connection.
	h := newHealth()
	if cfg.HTTPAddr != "off" {
		addr, err := metrics.ListenAndServe(ctx, cfg.HTTPAddr, metrics.Handler(h.metrics, h.checks()))
		if err != nil {
			return err
		}
		logger.Info("Serving /healthz, /readyz and /metrics", "address", addr.String())
	}

	url := cfg.NATSURL
	var natsOpts []nats.Option
	if url == "" {
		srv, err := natsembed.Start(cfg.EmbeddedNATSListen, cfg.EmbeddedNATSStoreDir)
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
		natsOpts = append(natsOpts, nats.InProcessServer(srv))
		logger.Info("NATS_URL is unset: started an embedded NATS server with JetStream", "url", url, "storeDir", cfg.EmbeddedNATSStoreDir)
	} else {
		auth := sink.Auth{CredsFile: cfg.NATSCreds, NKeyFile: cfg.NATSNKey, Token: cfg.NATSToken, User: cfg.NATSUser, Password: cfg.NATSPassword, CAFile: cfg.NATSCA, CertFile: cfg.NATSCert, KeyFile: cfg.NATSKey}
		if natsOpts, err = auth.Options(); err != nil {
			return err
		}
	}
	nc, err := sink.Connect(ctx, url, natsOpts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := Serve(ctx, cfg, kube, nc, withHealth(h)); err != nil {
		return err
	}
	if err := drainConn(nc, 5*time.Second); err != nil {
		logger.Info("NATS drain did not finish cleanly", "err", err)
	}
	return nil
}

func drainConn(nc *nats.Conn, timeout time.Duration) error {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		return err
	}
	select {
	case <-closed:
		return nil
	case <-time.After(timeout):
		return errors.New("timed out")
	}
}

// Option adjusts Serve for tests and benchmarks.
type Option func(*serveOptions)

type serveOptions struct {
	now           func() time.Time
	progressEvery time.Duration
	ready         func()
	listening     func(net.Addr)
	stuckAfter    time.Duration
	health        *health
}

// WithClock sets the clock that stamps events.
func WithClock(now func() time.Time) Option { return func(o *serveOptions) { o.now = now } }

// WithReady is called once every start-up snapshot is stored.
func WithReady(f func()) Option { return func(o *serveOptions) { o.ready = f } }

// WithListening is called with the address of the operational endpoints.
func WithListening(f func(net.Addr)) Option { return func(o *serveOptions) { o.listening = f } }

// withHealth makes Serve report through h, whose endpoints Run serves.
func withHealth(h *health) Option { return func(o *serveOptions) { o.health = h } }

// health is what the operational endpoints report. Run creates it before
// anything else exists; Serve fills it in as the parts come up.
type health struct {
	metrics     *metrics.Metrics
	synced      atomic.Bool
	snapshotted atomic.Bool
	conn        atomic.Pointer[nats.Conn]
	live        atomic.Pointer[func() error]
}

func newHealth() *health { return &health{metrics: metrics.New()} }

func (h *health) checks() metrics.Checks {
	return metrics.Checks{
		Live: func() error {
			if f := h.live.Load(); f != nil {
				return (*f)()
			}
			return nil
		},
		Ready: func() error {
			nc := h.conn.Load()
			return readiness(h.synced.Load(), h.snapshotted.Load(), nc != nil && nc.IsConnected())
		},
	}
}

// shared is the state the pipeline, the snapshotters and the health checks
// have in common.
type shared struct {
	queue    *queue
	counters counters
	markers  *markerWaiter
	metrics  *metrics.Metrics
	// progress is the Unix time in nanoseconds of the last acknowledgement.
	progress atomic.Int64
	// maxPayload is the current message size limit.
	maxPayload func() int
	// rejected is told about a type one of whose events JetStream refused.
	rejected func(*informers.Resource)
}

func newShared(queueSize int, m *metrics.Metrics) *shared {
	sh := &shared{queue: newQueue(queueSize), markers: newMarkerWaiter(), metrics: m,
		maxPayload: func() int { return 0 }, rejected: func(*informers.Resource) {}}
	sh.progress.Store(time.Now().UnixNano())
	sh.metrics.QueueGauges(sh.queue.Len, sh.queue.Cap)
	return sh
}

// Serve runs informers for the configured types and publishes their
// changes and snapshots on nc's JetStream until ctx ends, then shuts down
// within cfg.ShutdownTimeout.
func Serve(ctx context.Context, cfg *config.Config, kube Kube, nc *nats.Conn, opts ...Option) error {
	o := serveOptions{now: time.Now, progressEvery: 5 * time.Second, ready: func() {}, listening: func(net.Addr) {}, stuckAfter: 2 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	logger := klog.FromContext(ctx)

	watches, err := resolveWatches(ctx, cfg, informers.NewResolver(kube.Discovery))
	if err != nil {
		return err
	}

	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(2*cfg.PublishWindow),
		jetstream.WithPublishAsyncTimeout(cfg.PublishAckTimeout))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	subjects := encode.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	info, err := ensureStream(ctx, js, cfg, subjects)
	if err != nil {
		return err
	}
	streamLimit := int(info.Config.MaxMsgSize)
	// Read per event: after a reconnect the server may allow less.
	maxPayload := func() int {
		n := int(nc.MaxPayload())
		if streamLimit > 0 && (n <= 0 || streamLimit < n) {
			n = streamLimit
		}
		return n
	}
	logger.Info("JetStream stream ready", "stream", info.Config.Name, "subjects", strings.Join(info.Config.Subjects, ","), "maxPayload", maxPayload())

	h := o.health
	serveHTTP := h == nil
	if serveHTTP {
		h = newHealth()
	}
	h.conn.Store(nc)
	sh := newShared(cfg.QueueSize, h.metrics)
	sh.maxPayload = maxPayload
	sh.metrics.NATSConnected(nc.IsConnected)
	transform := informers.TransformOptions{StripManagedFields: cfg.StripManagedFields, StripLastApplied: cfg.StripLastApplied, RedactSecrets: cfg.RedactSecrets}.Transform()
	var sources []*informers.Source
	for _, w := range watches {
		src, err := informers.NewSource(kube.Clients, w.resource, w.scope, transform, sh.queue,
			informers.WithClock(o.now), informers.WithObserver(sourceObserver{sh.metrics}))
		if err != nil {
			return err
		}
		logger.Info("Watching", "resource", w.resource.String(), "kind", w.resource.Kind, "as", w.names, "namespaces", w.scope.Namespaces,
			"labels", w.scope.LabelSelector, "fields", w.scope.FieldSelector, "typed", src.Typed, "subjects", subjects.TypeWildcard(w.resource))
		sources = append(sources, src)
	}
	sh.rejected = func(r *informers.Resource) {
		for _, src := range sources {
			if src.Resource == r {
				src.MarkDirty()
			}
		}
	}

	// hard ends publishing: at the shutdown deadline, not at the signal.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	encoder := &encode.Encoder{Subjects: subjects}
	var wg sync.WaitGroup
	pub, pubErr, err := startPublishing(ctx, hard, &wg, cfg, js, encoder, sh)
	if err != nil {
		return err
	}

	live := func() error { return sh.live(nc.IsConnected(), pub.InFlight(), o.stuckAfter) }
	h.live.Store(&live)
	if serveHTTP && cfg.HTTPAddr != "off" {
		addr, err := metrics.ListenAndServe(ctx, cfg.HTTPAddr, metrics.Handler(h.metrics, h.checks()))
		if err != nil {
			cancelHard()
			wg.Wait()
			return err
		}
		logger.Info("Serving /healthz, /readyz and /metrics", "address", addr.String())
		o.listening(addr)
	}

	informerCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	for _, src := range sources {
		src.Run(informerCtx)
	}
	syncStart := time.Now()
	hasSynced := make([]cache.InformerSynced, len(sources))
	for i, src := range sources {
		hasSynced[i] = src.HasSynced
	}
	if !cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
		logger.Info("Stopped before the informer caches synced")
		return shutdown(ctx, cfg, cancelHard, &wg, pubErr, sh, pub)
	}
	h.synced.Store(true)
	logger.Info("Informer caches synced", "types", len(sources), "duration", time.Since(syncStart).Round(time.Millisecond))

	ids := newSnapshotIDs(o.now())
	started := make(chan error, len(sources))
	for _, src := range sources {
		s := &snapshotter{src: src, queue: sh.queue, markers: sh.markers, ids: ids, now: o.now, period: cfg.ResyncPeriod,
			canCatch: nc.IsConnected, progressEvery: o.progressEvery, metrics: sh.metrics}
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx, started) }()
	}
	go func() {
		for range sources {
			if err := <-started; err != nil {
				return
			}
		}
		h.snapshotted.Store(true)
		logger.Info("Start-up snapshots published; the stream holds the current state of every watched type")
		o.ready()
	}()

	<-ctx.Done()
	return shutdown(ctx, cfg, cancelHard, &wg, pubErr, sh, pub)
}

// live fails when events wait, NATS is connected, and still nothing has
// been acknowledged for stuckAfter: a loop is stuck. A NATS outage is not a
// reason to restart the bridge.
func (sh *shared) live(connected bool, inFlight int, stuckAfter time.Duration) error {
	waiting := sh.queue.Len() + inFlight
	if waiting == 0 || !connected {
		sh.progress.Store(time.Now().UnixNano())
		return nil
	}
	if idle := time.Since(time.Unix(0, sh.progress.Load())); idle > stuckAfter {
		return fmt.Errorf("no event acknowledged for %s although NATS is connected and %d events wait", idle.Round(time.Second), waiting)
	}
	return nil
}

func readiness(synced, snapshotted, connected bool) error {
	var missing []string
	if !synced {
		missing = append(missing, "informer caches not synced")
	}
	if !snapshotted {
		missing = append(missing, "start-up snapshots not published")
	}
	if !connected {
		missing = append(missing, "NATS not connected")
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}

// sourceObserver feeds informer observations into the metrics.
type sourceObserver struct{ m *metrics.Metrics }

func (o sourceObserver) Observed(r *informers.Resource, v informers.Verb) {
	o.m.ChangesObserved.WithLabelValues(r.String(), string(v)).Inc()
}
func (o sourceObserver) Dropped(r *informers.Resource) {
	o.m.ChangesDropped.WithLabelValues(r.String()).Inc()
}
func (o sourceObserver) WatchError(r *informers.Resource, _ error) {
	o.m.WatchErrors.WithLabelValues(r.String()).Inc()
}

// startPublishing runs the pipeline from sh's queue and the publisher
// behind it. The pipeline stops taking changes when soft ends; publishing
// stops when hard ends. The publisher's result arrives on the returned
// channel.
func startPublishing(soft, hard context.Context, wg *sync.WaitGroup, cfg *config.Config, js sink.AsyncPublisher, encoder *encode.Encoder, sh *shared) (*sink.Publisher, <-chan error, error) {
	pub, err := sink.NewPublisher(js, sink.WithWindow(cfg.PublishWindow), sink.WithBackoff(100*time.Millisecond, cfg.PublishMaxBackoff),
		sink.WithObserver(metrics.PublishObserver{M: sh.metrics}))
	if err != nil {
		return nil, nil, err
	}
	workers := cfg.EncodeWorkers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pipeline{queue: sh.queue, guard: newOrderGuard(), encoder: encoder, workers: workers,
		out: make(chan sink.Envelope, cfg.PublishWindow), counters: &sh.counters, markers: sh.markers,
		metrics: sh.metrics, progress: &sh.progress, maxPayload: sh.maxPayload, rejected: sh.rejected}
	pubErr := make(chan error, 1)
	wg.Add(2)
	go func() { defer wg.Done(); p.run(soft, hard) }()
	go func() { defer wg.Done(); pubErr <- pub.Run(hard, p.out) }()
	return pub, pubErr, nil
}

// shutdown gives queued events until the shutdown timeout to be
// acknowledged, then stops publishing.
func shutdown(ctx context.Context, cfg *config.Config, cancelHard context.CancelFunc, wg *sync.WaitGroup, pubErr <-chan error, sh *shared, pub *sink.Publisher) error {
	logger := klog.FromContext(ctx)
	cnt, q := &sh.counters, sh.queue
	logger.Info("Shutting down; waiting for queued events to be acknowledged", "queued", q.Len(), "inFlight", pub.InFlight(), "timeout", cfg.ShutdownTimeout)
	timer := time.AfterFunc(cfg.ShutdownTimeout, cancelHard)
	defer timer.Stop()
	err := <-pubErr
	cancelHard()
	wg.Wait()
	left := cnt.unacked.Load() + int64(q.Len())
	if err != nil && left > 0 {
		logger.Info("Shutdown timeout reached: some events were not acknowledged; the next start-up snapshot repairs consumers' state",
			"unacknowledged", left)
	}
	logger.Info("Stopped", "published", cnt.acked.Load(), "superseded", cnt.superseded.Load(), "truncated", cnt.truncated.Load(), "encodeErrors", cnt.encodeErrs.Load())
	return nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg *config.Config, subjects encode.Subjects) (*jetstream.StreamInfo, error) {
	storage := jetstream.FileStorage
	if cfg.StreamStorage == "memory" {
		storage = jetstream.MemoryStorage
	}
	sc := jetstream.StreamConfig{
		Name:        cfg.StreamName,
		Description: "Kubernetes object changes published by kubebridge",
		Subjects:    []string{subjects.Stream()},
		Storage:     storage,
		Replicas:    cfg.StreamReplicas,
		MaxAge:      cfg.StreamMaxAge,
		MaxBytes:    cfg.StreamMaxBytes,
		Duplicates:  cfg.StreamDuplicateWindow,
	}
	logger := klog.FromContext(ctx)
	wait := 500 * time.Millisecond
	for {
		opCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := sink.EnsureStream(opCtx, js, sc, subjects.ClusterWildcard())
		cancel()
		if err == nil {
			return info, nil
		}
		// A wrong stream is a configuration problem; anything else may be
		// NATS not being reachable yet.
		if errors.Is(err, sink.ErrStreamSubjects) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || ctx.Err() != nil {
			return nil, err
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			return nil, err
		}
		logger.Info("JetStream not available yet; retrying", "err", err, "retryIn", wait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

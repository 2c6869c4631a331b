package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// publishing is the half of the bridge from the intake to JetStream.
type publishing struct {
	intake  *intake.Intake
	budget  *byteBudget
	markers *markerWaiter
	pub     *sink.Publisher
	cnt     counters
	metrics *metrics.Metrics
	// errc receives the pipeline's result, once the publisher has drained.
	errc chan error
}

// publishingDeps are what startPublishing needs besides the configuration.
type publishingDeps struct {
	js sink.AsyncPublisher
	// acks, if set, are installed on js, which hands the publisher its
	// acknowledgements through them.
	acks    *sink.Acks
	encoder *encode.Encoder
	metrics *metrics.Metrics
	// maxPayload is the current message size limit; rereadLimits is
	// called after JetStream rejected a message.
	maxPayload   func() int
	rereadLimits func()
	// fence, if set, makes every publish conditional on its subject's
	// last sequence (see startTerm).
	fence *sink.Fence
}

// startPublishing runs the pipeline and the publisher behind it. The
// pipeline stops taking new work when soft ends and hands on what waits;
// publishing stops when hard ends.
func startPublishing(soft, hard context.Context, wg *sync.WaitGroup, cfg *config.Config, in *intake.Intake, d publishingDeps) (*publishing, error) {
	m := d.metrics
	s := &publishing{intake: in, budget: newByteBudget(int64(cfg.PublishBufferBytes)), markers: newMarkerWaiter(), metrics: m, errc: make(chan error, 1)}
	m.IntakeGauges(in.PendingObjects, s.budget.inUse, int64(cfg.PublishBufferBytes))
	opts := []sink.Option{sink.WithWindow(cfg.PublishWindow), sink.WithBackoff(100*time.Millisecond, cfg.PublishMaxBackoff),
		sink.WithObserver(metrics.PublishObserver{M: m})}
	if d.fence != nil {
		opts = append(opts, sink.WithFence(d.fence))
	}
	if d.acks != nil {
		opts = append(opts, sink.WithAcks(d.acks))
	}
	var err error
	s.pub, err = sink.NewPublisher(d.js, opts...)
	if err != nil {
		return nil, err
	}
	if d.rereadLimits == nil {
		d.rereadLimits = func() {}
	}
	p := &pipeline{intake: in, guard: newOrderGuard(), encoder: d.encoder, workers: encodeWorkers(cfg), linger: cfg.PublishLinger,
		budget: s.budget, pub: s.pub, counters: &s.cnt, markers: s.markers, metrics: m,
		maxPayload: d.maxPayload, rereadLimits: d.rereadLimits, unpublishable: newUnpublishable()}
	wg.Add(1)
	go func() { defer wg.Done(); s.errc <- p.run(soft, hard) }()
	return s, nil
}

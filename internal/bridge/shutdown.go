package bridge

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/metrics"
)

// shutdown gives what waits until the shutdown timeout to be acknowledged,
// then stops publishing.
func shutdown(ctx context.Context, cfg *config.Config, cancelHard context.CancelFunc, wg *sync.WaitGroup, pb *publishing) {
	logger := klog.FromContext(ctx)
	in, pub, cnt := pb.intake, pb.pub, &pb.cnt
	logger.Info("Shutting down; waiting for pending changes to be acknowledged", "pendingObjects", in.PendingObjects(), "inFlight", pub.InFlight(), "timeout", cfg.ShutdownTimeout)
	timer := time.AfterFunc(cfg.ShutdownTimeout, cancelHard)
	defer timer.Stop()
	err := <-pb.errc
	cancelHard()
	wg.Wait()
	if left := in.PendingObjects(); err != nil && (left > 0 || cnt.unacked.Load() > 0) {
		logger.Info("Shutdown timeout reached: some changes were not acknowledged; the next start-up snapshot repairs consumers' state",
			"pendingObjects", left, "unacknowledged", cnt.unacked.Load())
	}
	m := pb.metrics
	logger.Info("Stopped", "published", metrics.Total(m.EventsPublished), "superseded", metrics.Total(m.EventsSuperseded),
		"truncated", metrics.Total(m.OversizeObjects), "unpublishable", metrics.Total(m.Unpublishable))
}

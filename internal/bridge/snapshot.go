package bridge

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/metrics"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// snapshotIDs makes snapshot ids unique across the types of one process
// (the counter) and across restarts (the start time).
type snapshotIDs struct {
	base string
	n    atomic.Int64
}

func newSnapshotIDs(start time.Time) *snapshotIDs {
	return &snapshotIDs{base: strconv.FormatInt(start.UnixMilli(), 36)}
}

func (s *snapshotIDs) next() string { return s.base + "-" + strconv.FormatInt(s.n.Add(1), 10) }

// snapshotter publishes the framed snapshots of one resource type, one at a
// time: begin marker, one item per object in the indexer, end marker.
type snapshotter struct {
	src      *informers.Source
	queue    *queue
	markers  *markerWaiter
	ids      *snapshotIDs
	now      func() time.Time
	period   time.Duration
	canCatch func() bool
	metrics  *metrics.Metrics
	// progressEvery is how often a long snapshot logs its progress.
	progressEvery time.Duration
}

// run publishes the start-up snapshot, closes started, then keeps
// publishing periodic snapshots and snapshots of a dirty type until ctx ends.
func (s *snapshotter) run(ctx context.Context, started chan<- error) {
	logger := klog.FromContext(ctx).WithValues("resource", s.src.Resource.String())
	ctx = klog.NewContext(ctx, logger)
	err := s.snapshot(ctx, "start-up")
	started <- err
	if err != nil {
		return
	}
	var periodic <-chan time.Time
	if s.period > 0 {
		t := time.NewTicker(s.period)
		defer t.Stop()
		periodic = t.C
	}
	dirtyCheck := time.NewTicker(time.Second)
	defer dirtyCheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-periodic:
			if err := s.snapshot(ctx, "periodic"); err != nil {
				return
			}
		case <-dirtyCheck.C:
			// Wait until the queue has room and NATS is reachable: a
			// snapshot taken earlier would only be dropped again.
			if !s.src.Dirty() || s.queue.Len() > s.queue.Cap()/2 || !s.canCatch() {
				continue
			}
			s.src.TakeDirty()
			s.metrics.DirtyResnapshots.WithLabelValues(s.src.Resource.String()).Inc()
			logger.Info("Changes were dropped while the queue was full; publishing a fresh snapshot", "droppedTotal", s.src.Dropped())
			if err := s.snapshot(ctx, "dropped-changes"); err != nil {
				return
			}
		}
	}
}

func (s *snapshotter) snapshot(ctx context.Context, reason string) error {
	logger := klog.FromContext(ctx)
	res := s.src.Resource
	id := s.ids.next()
	start := time.Now()
	ended := s.markers.expect(id)
	// The begin marker is queued before the indexer is listed: every change
	// queued before it is older than what the listing will show.
	if err := s.queue.Put(ctx, informers.Change{Verb: informers.SnapshotBegin, Resource: res, SnapshotID: id, ObservedAt: s.now()}); err != nil {
		return err
	}
	objs := s.src.List()
	logger.V(2).Info("Snapshot started", "snapshotID", id, "reason", reason, "objects", len(objs))
	lastLog := start
	for i, obj := range objs {
		if err := s.queue.Put(ctx, informers.Change{Verb: informers.SnapshotItem, Resource: res, Object: obj, SnapshotID: id, ObservedAt: s.now()}); err != nil {
			return err
		}
		if time.Since(lastLog) >= s.progressEvery {
			lastLog = time.Now()
			elapsed := time.Since(start)
			logger.Info("Snapshot in progress", "snapshotID", id, "queued", i+1, "of", len(objs), "elapsed", elapsed.Round(time.Millisecond), "perSecond", int(float64(i+1)/elapsed.Seconds()))
		}
	}
	// The pipeline fills in the count of items actually stored.
	if err := s.queue.Put(ctx, informers.Change{Verb: informers.SnapshotEnd, Resource: res, SnapshotID: id, ObservedAt: s.now()}); err != nil {
		return err
	}
	select {
	case err := <-ended:
		if err != nil {
			return fmt.Errorf("%w: %s snapshot %s: %w", errEndNotPublished, res, id, err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	elapsed := time.Since(start)
	s.metrics.Snapshots.WithLabelValues(res.String(), reason).Inc()
	s.metrics.SnapshotDuration.WithLabelValues(res.String()).Observe(elapsed.Seconds())
	s.metrics.SnapshotItems.WithLabelValues(res.String()).Add(float64(len(objs)))
	logger.Info("Snapshot published", "snapshotID", id, "reason", reason, "items", len(objs), "duration", elapsed.Round(time.Millisecond), "perSecond", int(float64(len(objs))/max(elapsed.Seconds(), 1e-9)))
	return nil
}

package bridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/intake"
	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// snapshotIDs makes snapshot ids unique across the types of one process
// (the counter), across restarts (the start time) and across processes
// started in the same millisecond (a random part): the shards of one
// cluster start together, and a marker's event id, which JetStream
// de-duplicates by, is its resource, snapshot id and verb, so two shards'
// markers with one id would lose one of them as a duplicate.
type snapshotIDs struct {
	base string
	n    atomic.Int64
}

func newSnapshotIDs(start time.Time) *snapshotIDs {
	// The random part always has randomDigits digits, so that no two
	// start times and random parts make the same base: with a shorter
	// random part, a millisecond one digit longer could.
	random := strconv.FormatUint(uint64(rand.Uint32()), 36)
	return &snapshotIDs{base: strconv.FormatInt(start.UnixMilli(), 36) + strings.Repeat("0", randomDigits-len(random)) + random}
}

// randomDigits is the base-36 digits of the largest uint32 (1z141z3).
const randomDigits = 7

func (s *snapshotIDs) next() string { return s.base + "-" + strconv.FormatInt(s.n.Add(1), 10) }

// snapshotter publishes the snapshots of one resource type: the start-up
// one as soon as the type's own cache has synced, then one every period.
// A snapshot that fails is retried with backoff; the type is never left
// without its start-up snapshot.
type snapshotter struct {
	res     *informers.Resource
	scope   informers.Scope
	src     syncedCache
	intake  *intake.Intake
	markers *markerWaiter
	ids     *snapshotIDs
	period  time.Duration
	metrics *metrics.Metrics
	status  *typeStatus
	// minBackoff and maxBackoff bound the wait before a failed snapshot
	// is tried again.
	minBackoff, maxBackoff time.Duration
	// syncLogEvery is how often a type whose cache has not synced says so.
	syncLogEvery time.Duration
	// missedDeletes, if set, returns the deletes made while no bridge was
	// publishing; they are published before the start-up snapshot.
	missedDeletes func(context.Context) ([]informers.Change, error)
}

// syncedCache is a cache a snapshot can read once it has synced.
// *informers.Source is one.
type syncedCache interface {
	intake.CacheReader
	HasSynced() bool
}

// run returns when ctx ends.
func (s *snapshotter) run(ctx context.Context) {
	res := s.res.String()
	logger := klog.FromContext(ctx).WithValues("resource", res)
	ctx = klog.NewContext(ctx, logger)
	if !s.waitForSync(ctx) {
		return
	}
	s.status.setSynced()
	if !s.publishMissedDeletes(ctx) {
		return
	}
	reason := "start-up"
	backoff := s.minBackoff
	for {
		err := s.snapshot(ctx, reason)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.metrics.SnapshotFailures.WithLabelValues(res).Inc()
			logger.Error(err, "Snapshot failed; trying again", "reason", reason, "retryIn", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, s.maxBackoff)
			continue
		}
		backoff = s.minBackoff
		if reason == "start-up" {
			s.status.setSnapshotted()
		}
		if s.period <= 0 || !sleep(ctx, s.period) {
			return
		}
		reason = "periodic"
	}
}

// publishMissedDeletes hands the deletes missed while no bridge was
// publishing to the intake, retrying with backoff until the stream could be
// read. It reports false when ctx ended first.
func (s *snapshotter) publishMissedDeletes(ctx context.Context) bool {
	if s.missedDeletes == nil {
		s.intake.Release(s.res, nil)
		return true
	}
	logger := klog.FromContext(ctx)
	res := s.res.String()
	backoff := s.minBackoff
	for {
		start := time.Now()
		deletes, err := s.missedDeletes(ctx)
		if err == nil {
			for _, c := range deletes {
				s.metrics.ChangesObserved.WithLabelValues(res, string(c.Verb)).Inc()
				s.metrics.MissedDeletes.WithLabelValues(res).Inc()
			}
			// Ahead of every change the type's informer delivered
			// meanwhile, which waited for this.
			s.intake.Release(s.res, deletes)
			if len(deletes) > 0 {
				logger.Info("Publishing deletes made while no bridge was publishing (finalstateunknown=true)", "deletes", len(deletes), "duration", time.Since(start).Round(time.Millisecond))
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		logger.Error(err, "Cannot read the stream to find deletes missed while down; trying again", "retryIn", backoff)
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, s.maxBackoff)
	}
}

// waitForSync waits for this type's cache alone, so that a type that cannot
// be listed (forbidden, its CRD deleted) holds up nobody else.
func (s *snapshotter) waitForSync(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	start := time.Now()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	nextLog := start.Add(s.syncLogEvery)
	for !s.src.HasSynced() {
		select {
		case <-ctx.Done():
			return false
		case now := <-poll.C:
			if now.After(nextLog) {
				nextLog = now.Add(s.syncLogEvery)
				logger.Info("Informer cache has not synced yet; this type is not snapshotted until it has (see the watch errors above)",
					"waiting", time.Since(start).Round(time.Second))
			}
		}
	}
	logger.V(2).Info("Informer cache synced", "duration", time.Since(start).Round(time.Millisecond))
	return true
}

func (s *snapshotter) snapshot(ctx context.Context, reason string) error {
	logger := klog.FromContext(ctx)
	res := s.res.String()
	id := s.ids.next()
	start := time.Now()
	ended := s.markers.expect(id)
	s.intake.RequestSnapshot(s.res, s.src, s.scope, id)
	logger.V(2).Info("Snapshot requested", "snapshotID", id, "reason", reason)
	var r markerResult
	select {
	case r = <-ended:
	case <-ctx.Done():
		s.markers.forget(id)
		return ctx.Err()
	}
	if r.err != nil {
		return fmt.Errorf("%w: %s snapshot %s: %w", errEndNotPublished, res, id, r.err)
	}
	elapsed := time.Since(start)
	s.metrics.Snapshots.WithLabelValues(res, reason).Inc()
	s.metrics.SnapshotDuration.WithLabelValues(res).Observe(elapsed.Seconds())
	s.metrics.SnapshotItems.WithLabelValues(res).Add(float64(r.stored))
	logger.Info("Snapshot published", "snapshotID", id, "reason", reason, "items", r.stored, "duration", elapsed.Round(time.Millisecond),
		"perSecond", int(float64(r.stored)/max(elapsed.Seconds(), 1e-9)))
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var errEndNotPublished = errors.New("snapshot end marker was not published")

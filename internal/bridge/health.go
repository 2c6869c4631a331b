package bridge

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubebridge/kubebridge/internal/metrics"
)

// health is what the operational endpoints report. Main creates it and
// serves it before NATS is reached and the bridge is built, so that probes
// see a live process that is not ready yet; Run hands it the bridge once
// prepared (prepare).
type health struct {
	metrics *metrics.Metrics
	bridge  atomic.Pointer[Bridge]
}

func newHealth() *health { return &health{metrics: metrics.New()} }

// attach makes the endpoints report on b from now on.
func (h *health) attach(b *Bridge) { h.bridge.Store(b) }

func (h *health) checks() metrics.Checks {
	return metrics.Checks{
		Live: func() error {
			if b := h.bridge.Load(); b != nil {
				return b.alive()
			}
			return nil
		},
		Ready: func() error {
			if b := h.bridge.Load(); b != nil {
				return b.ready()
			}
			return errors.New("starting: resource types not resolved yet")
		},
	}
}

// typeStatus is one resource type's way to readiness: its own cache synced,
// then its own start-up snapshot stored.
type typeStatus struct {
	resource    string
	synced      atomic.Bool
	snapshotted atomic.Bool
	ready       prometheus.Gauge
	// onReady is called once, when the start-up snapshot is stored.
	onReady func()
}

func newTypeStatus(resource string, m *metrics.Metrics, onReady func()) *typeStatus {
	m.InitResource(resource)
	s := &typeStatus{resource: resource, ready: m.ResourceReady.WithLabelValues(resource), onReady: onReady}
	s.ready.Set(0)
	return s
}

func (s *typeStatus) setSynced() { s.synced.Store(true) }

func (s *typeStatus) setSnapshotted() {
	if s.snapshotted.CompareAndSwap(false, true) {
		s.ready.Set(1)
		s.onReady()
	}
}

// readiness names every type that is not ready, and why.
func readiness(types []*typeStatus, resolved, connected bool) error {
	var missing []string
	if !resolved {
		missing = append(missing, "resource types not resolved yet")
	}
	for _, t := range types {
		switch {
		case !t.synced.Load():
			missing = append(missing, t.resource+": informer cache not synced (list or watch failing?)")
		case !t.snapshotted.Load():
			missing = append(missing, t.resource+": start-up snapshot not stored")
		}
	}
	if !connected {
		missing = append(missing, "NATS not connected")
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}

// liveness fails only for a stuck internal loop: work waits, NATS is
// connected, and nothing at all has happened to a publish (no ack, no
// error to retry) for stuckAfter. A NATS or JetStream outage keeps failing
// attempts coming, so it is not a reason to restart the bridge.
type liveness struct {
	// calm is the Unix time in nanoseconds when nothing last waited or
	// NATS was last disconnected: the stuck clock starts after it.
	calm       atomic.Int64
	stuckAfter time.Duration
}

func newLiveness(stuckAfter time.Duration) *liveness {
	l := &liveness{stuckAfter: stuckAfter}
	l.calm.Store(time.Now().UnixNano())
	return l
}

// check is given the publisher's last attempt outcome.
func (l *liveness) check(connected bool, waiting int, lastActivity time.Time) error {
	if waiting == 0 || !connected {
		l.calm.Store(time.Now().UnixNano())
		return nil
	}
	since := time.Unix(0, l.calm.Load())
	if lastActivity.After(since) {
		since = lastActivity
	}
	if idle := time.Since(since); idle > l.stuckAfter {
		return fmt.Errorf("nothing happened to any publish for %s although NATS is connected and %d objects or events wait", idle.Round(time.Second), waiting)
	}
	return nil
}

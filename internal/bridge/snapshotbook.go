package bridge

import (
	"sync"
	"sync/atomic"
)

// snapshotItems counts the items of each open snapshot that were stored,
// so the end marker reports what a consumer will actually see, and lists
// those that could not be published in any form, so that consumers do not
// sweep them.
type snapshotItems struct {
	mu          sync.Mutex
	stored      map[string]*atomic.Int64
	unpublished map[string][]string
}

// leftOut records that the item of key in snapshot id could not be published.
func (s *snapshotItems) leftOut(id, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unpublished == nil {
		s.unpublished = map[string][]string{}
	}
	if len(s.unpublished[id]) < maxUnpublishedListed {
		s.unpublished[id] = append(s.unpublished[id], key)
	}
}

// maxUnpublishedListed bounds the end marker's unpublished list, which is a
// header: objects past it may be swept by consumers (they are logged).
const maxUnpublishedListed = 64

func (s *snapshotItems) open(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		s.stored = map[string]*atomic.Int64{}
	}
	s.stored[id] = &atomic.Int64{}
}

func (s *snapshotItems) counter(id string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[id]
}

// close returns the number of items stored and the keys left out.
func (s *snapshotItems) close(id string) (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, left := s.stored[id], s.unpublished[id]
	delete(s.stored, id)
	delete(s.unpublished, id)
	if n == nil {
		return 0, left
	}
	return int(n.Load()), left
}

// markerResult is what a snapshotter learns of its end marker.
type markerResult struct {
	stored int
	err    error
}

// markerWaiter lets a snapshotter wait for its end marker to be stored.
type markerWaiter struct {
	mu      sync.Mutex
	waiting map[string]chan markerResult
}

func newMarkerWaiter() *markerWaiter { return &markerWaiter{waiting: map[string]chan markerResult{}} }

func (w *markerWaiter) expect(snapshotID string) <-chan markerResult {
	ch := make(chan markerResult, 1)
	w.mu.Lock()
	w.waiting[snapshotID] = ch
	w.mu.Unlock()
	return ch
}

func (w *markerWaiter) forget(snapshotID string) {
	w.mu.Lock()
	delete(w.waiting, snapshotID)
	w.mu.Unlock()
}

func (w *markerWaiter) done(snapshotID string, r markerResult) {
	w.mu.Lock()
	ch := w.waiting[snapshotID]
	delete(w.waiting, snapshotID)
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

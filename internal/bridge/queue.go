package bridge

import (
	"context"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// queue is the bounded buffer between informer handlers and the sequencer.
// Handlers never wait on it (TryPut); snapshots, which run on their own
// goroutines, do (Put).
type queue struct {
	ch chan informers.Change
}

func newQueue(size int) *queue { return &queue{ch: make(chan informers.Change, size)} }

func (q *queue) TryPut(c informers.Change) bool {
	select {
	case q.ch <- c:
		return true
	default:
		return false
	}
}

func (q *queue) Put(ctx context.Context, c informers.Change) error {
	select {
	case q.ch <- c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *queue) Len() int { return len(q.ch) }
func (q *queue) Cap() int { return cap(q.ch) }

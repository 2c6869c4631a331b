package bridge

import (
	"context"
	"sync"
)

// byteBudget bounds the bytes of encoded messages between the encoders and
// JetStream's acknowledgement: buffered for the publisher and in flight.
// When it is spent, the collector waits, the pipeline's run loop stops
// taking work, and changes wait in the intake, where they coalesce per
// object. A message larger than the whole budget is let through alone.
type byteBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// freed is closed and replaced when bytes are released while an
	// acquire waits (waiting), so a release nobody waits for allocates
	// nothing.
	freed   chan struct{}
	waiting bool
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, freed: make(chan struct{})}
}

// acquire takes n bytes (at most the whole budget), waiting until they are
// free or ctx ends. It returns what it took, to be released.
func (b *byteBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.limit)
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return n, nil
		}
		freed := b.freed
		b.waiting = true
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.waiting {
		close(b.freed)
		b.freed = make(chan struct{})
		b.waiting = false
	}
	b.mu.Unlock()
}

// inUse is the number of bytes taken.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

package benchkit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Retry calls f until it succeeds, ctx ends or it failed five times,
// waiting 200ms more after each failure than after the one before; it
// returns f's last error.
func Retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		if err = f(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// Parallel calls f for 0 … n-1 from workers goroutines, and progress
// (when not nil) with how many calls are done after each. The first error
// stops the others and is returned; else ctx's error.
func Parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error, progress func(done int)) error {
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				if d := done.Add(1); progress != nil {
					progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

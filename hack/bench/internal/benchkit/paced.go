package benchkit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Paced calls f for 0 … n-1, handing call k to one of workers goroutines
// at rate calls a second: a churn at a fixed rate, whatever each call
// takes (as long as the workers keep up). progress, when not nil, is
// called with how many calls were handed over, after each. The first
// error stops the others and is returned; else ctx's error.
func Paced(ctx context.Context, n int, rate float64, workers int, f func(ctx context.Context, k int) error, progress func(sent int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := range jobs {
				if err := f(ctx, k); err != nil {
					failed.CompareAndSwap(nil, &err)
					cancel()
				}
			}
		})
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	for k := 0; k < n && ctx.Err() == nil; k++ {
		select {
		case jobs <- k:
		case <-ctx.Done():
		}
		if progress != nil {
			progress(k + 1)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	if p := failed.Load(); p != nil {
		return *p
	}
	return ctx.Err()
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// awaitChurn reads "measure N" from the parent and, for an informer mode,
// waits until the informer delivered N events.
func awaitChurn(ctx context.Context, informer bool, events *atomic.Int64) error {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return errors.New("parent closed stdin before the churn was done")
	}
	var want int64
	if _, err := fmt.Sscanf(in.Text(), "measure %d", &want); err != nil {
		return fmt.Errorf("parent said %q: %w", in.Text(), err)
	}
	if !informer {
		return nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	for events.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("informer delivered %d events after 5m, want %d", events.Load(), want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// startInformer starts an informer's factory, counting the informer's
// events when wait is set, and returns how many objects it holds once
// synced.
func startInformer(ctx context.Context, start func(<-chan struct{}), inf cache.SharedIndexInformer, counter cache.ResourceEventHandler, wait bool) (int, error) {
	if wait {
		if _, err := inf.AddEventHandler(counter); err != nil {
			return 0, err
		}
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return 0, errors.New("cache did not sync")
	}
	return len(inf.GetStore().ListKeys()), nil
}

// countingQueue counts a Source's changes after its initial list, as the
// informer modes' handler does, with -wait only.
type countingQueue struct {
	events *atomic.Int64
	wait   bool
}

func (q countingQueue) Add(c informers.Change) {
	if q.wait {
		q.events.Add(1)
	}
}

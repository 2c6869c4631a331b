package consume

import (
	"context"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// opaqueContext hides its parent's type, so that the context package
// watches it with a goroutine per child until the child is cancelled: a
// child never cancelled shows as a goroutine that stays.
type opaqueContext struct{ context.Context }

func (opaqueContext) Value(any) any { return nil }

// TestWatchContextReleasesEverything stops many timed watches' contexts
// and checks that nothing they made outlives them: a reflector sends
// timeoutSeconds on every watch, so a context left behind per watch
// grows for as long as the informer runs.
func TestWatchContextReleasesEverything(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	before := runtime.NumGoroutine()
	timeout := int64(300)
	const watches = 100
	for range watches {
		_, cancel := watchContext(opaqueContext{parent}, &timeout)
		cancel()
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return runtime.NumGoroutine() <= before+watches/10, nil
	})
	if err != nil {
		t.Fatalf("%d goroutines before %d stopped watches, %d 10s after: their contexts are not released", before, watches, runtime.NumGoroutine())
	}
}

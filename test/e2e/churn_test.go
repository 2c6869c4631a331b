package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// churn creates, updates and deletes ConfigMaps named churn-NN (NN below
// names) in one namespace from a goroutine, one request at a time, until
// stopped.
type churn struct {
	cs    kubernetes.Interface
	ns    string
	names int
	pause time.Duration
	rng   *rand.Rand

	creates, updates, deletes atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	errs   []error
}

func startChurn(cs kubernetes.Interface, ns string, names int, pause time.Duration, seed uint64) *churn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &churn{cs: cs, ns: ns, names: names, pause: pause, rng: rand.New(rand.NewPCG(seed, 7)), cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// ops is the number of successful requests so far.
func (c *churn) ops() int64 { return c.creates.Load() + c.updates.Load() + c.deletes.Load() }

// stop ends the churn and returns the errors it met.
func (c *churn) stop() []error {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs
}

func (c *churn) String() string {
	return fmt.Sprintf("%d creates, %d updates, %d deletes", c.creates.Load(), c.updates.Load(), c.deletes.Load())
}

// waitOps waits until at least n more requests succeeded than at the call,
// or the timeout passes; it reports whether they did.
func (c *churn) waitOps(n int64, timeout time.Duration) bool {
	target := c.ops() + n
	deadline := time.Now().Add(timeout)
	for c.ops() < target {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func (c *churn) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *churn) run(ctx context.Context) {
	defer close(c.done)
	live := map[string]*corev1.ConfigMap{}
	list, err := c.cs.CoreV1().ConfigMaps(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.fail(err)
		return
	}
	for i := range list.Items {
		live[list.Items[i].Name] = &list.Items[i]
	}
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("churn-%02d", c.rng.IntN(c.names))
		cm, ok := live[name]
		opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		var err error
		switch {
		case !ok:
			cm, err = c.cs.CoreV1().ConfigMaps(c.ns).Create(opCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
			if err == nil {
				live[name] = cm
				c.creates.Add(1)
			}
		case c.rng.IntN(4) == 0:
			err = c.cs.CoreV1().ConfigMaps(c.ns).Delete(opCtx, name, metav1.DeleteOptions{})
			if err == nil {
				delete(live, name)
				c.deletes.Add(1)
			}
		default:
			cm = cm.DeepCopy()
			cm.Data["i"] = fmt.Sprint(i)
			cm, err = c.cs.CoreV1().ConfigMaps(c.ns).Update(opCtx, cm, metav1.UpdateOptions{})
			if err == nil {
				live[name] = cm
				c.updates.Add(1)
			}
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			c.fail(fmt.Errorf("churn %s: %w", name, err))
			// Resynchronise this name with the apiserver.
			cur, gerr := c.cs.CoreV1().ConfigMaps(c.ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case gerr == nil:
				live[name] = cur
			case apierrors.IsNotFound(gerr):
				delete(live, name)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.pause):
		}
	}
}

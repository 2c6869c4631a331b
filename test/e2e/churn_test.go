package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// churn creates, updates and deletes ConfigMaps named <prefix>NN (NN below
// names, at least two digits) in one namespace until stopped. Each worker
// goroutine owns the names NN ≡ worker (mod workers) and makes one request
// at a time, so the changes of one name are made in order.
type churn struct {
	cs   kubernetes.Interface
	ns   string
	opts churnOptions

	creates, updates, deletes atomic.Int64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	// deleted holds the uids of the objects the churn deleted.
	deleted []string
}

// churnOptions configure startChurnWith.
type churnOptions struct {
	names   int           // names churned
	workers int           // goroutines (default 1)
	pause   time.Duration // after each request of a worker
	seed    uint64
	prefix  string            // default "churn-"
	filler  int               // bytes of extra data in each created ConfigMap
	labels  map[string]string // of each created ConfigMap
}

// startChurn churns names names with one worker.
func startChurn(cs kubernetes.Interface, ns string, names int, pause time.Duration, seed uint64) *churn {
	return startChurnWith(cs, ns, churnOptions{names: names, pause: pause, seed: seed})
}

func startChurnWith(cs kubernetes.Interface, ns string, opts churnOptions) *churn {
	if opts.workers < 1 {
		opts.workers = 1
	}
	if opts.prefix == "" {
		opts.prefix = "churn-"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &churn{cs: cs, ns: ns, opts: opts, cancel: cancel}
	for w := range opts.workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.run(ctx, w)
		}()
	}
	return c
}

// churnName is the name of index i.
func churnName(prefix string, i int) string { return fmt.Sprintf("%s%02d", prefix, i) }

// ops is the number of successful requests so far.
func (c *churn) ops() int64 { return c.creates.Load() + c.updates.Load() + c.deletes.Load() }

// stop ends the churn and returns the errors it met.
func (c *churn) stop() []error {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs
}

// String counts the requests that succeeded and, when some failed, says
// how many and the last error: a stalled churn says why.
func (c *churn) String() string {
	s := fmt.Sprintf("%d creates, %d updates, %d deletes", c.creates.Load(), c.updates.Load(), c.deletes.Load())
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.errs); n > 0 {
		s += fmt.Sprintf("; %d failed, the last: %v", n, c.errs[n-1])
	}
	return s
}

// waitOps waits until at least n more requests succeeded than at the call,
// or the timeout passes; it reports whether they did.
func (c *churn) waitOps(n int64, timeout time.Duration) bool {
	target := c.ops() + n
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return c.ops() >= target, nil
	}) == nil
}

// deletedUIDs returns the uids of the objects deleted so far.
func (c *churn) deletedUIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.deleted...)
}

func (c *churn) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *churn) run(ctx context.Context, worker int) {
	workers := c.opts.workers
	// The names of this worker: indexes worker, worker+workers, ...
	count := (c.opts.names - worker + workers - 1) / workers
	if count <= 0 {
		return
	}
	// One worker keeps the sequence of the single-goroutine churn.
	rng := rand.New(rand.NewPCG(c.opts.seed, 7+uint64(worker)))
	live := map[string]*corev1.ConfigMap{}
	list, err := c.cs.CoreV1().ConfigMaps(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.fail(err)
		return
	}
	mine := map[string]bool{}
	for k := range count {
		mine[churnName(c.opts.prefix, k*workers+worker)] = true
	}
	for i := range list.Items {
		if mine[list.Items[i].Name] {
			live[list.Items[i].Name] = &list.Items[i]
		}
	}
	filler := strings.Repeat("x", c.opts.filler)
	for i := 0; ctx.Err() == nil; i++ {
		name := churnName(c.opts.prefix, rng.IntN(count)*workers+worker)
		cm, ok := live[name]
		// Not ctx: stop must not cancel a request the apiserver may still
		// commit after the client gave up, or a list taken after stop
		// would miss a write the stream then shows (TestSnapshotWithChurn
		// saw an update stored after its list; TestRestartAfterSIGKILL a
		// delete). stop waits for the request instead.
		opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		var err error
		switch {
		case !ok:
			data := map[string]string{"i": fmt.Sprint(i)}
			if filler != "" {
				data["filler"] = filler
			}
			cm, err = c.cs.CoreV1().ConfigMaps(c.ns).Create(opCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.opts.labels}, Data: data}, metav1.CreateOptions{})
			if err == nil {
				live[name] = cm
				c.creates.Add(1)
			}
		case rng.IntN(4) == 0:
			// Preconditioned on the uid, so the uid recorded is the one
			// deleted.
			err = c.cs.CoreV1().ConfigMaps(c.ns).Delete(opCtx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
			if err == nil {
				delete(live, name)
				c.deletes.Add(1)
				c.mu.Lock()
				c.deleted = append(c.deleted, string(cm.UID))
				c.mu.Unlock()
			}
		default:
			cm = cm.DeepCopy()
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
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
		case <-time.After(c.opts.pause):
		}
	}
}

package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

type op struct {
	kind opKind
	name string
	i    int
}

type churn struct {
	cs                        kubernetes.Interface
	o                         options
	done, failed              atomic.Int64
	creates, updates, deletes atomic.Int64
	mu                        sync.Mutex
	firstErrs                 []string
}

func newChurn(cs kubernetes.Interface, o options) *churn { return &churn{cs: cs, o: o} }

func (c *churn) String() string {
	return fmt.Sprintf("%d creates, %d updates, %d deletes", c.creates.Load(), c.updates.Load(), c.deletes.Load())
}

// run makes the requests at the configured rate. The dispatcher picks the
// targets, so each request sees the objects as the previous ones left
// them; requests on one object go through one worker, in order.
func (c *churn) run(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(42, 7))
	kinds := make([]opKind, 0, c.o.creates+c.o.updates+c.o.deletes)
	for range c.o.creates {
		kinds = append(kinds, opCreate)
	}
	for range c.o.updates {
		kinds = append(kinds, opUpdate)
	}
	for range c.o.deletes {
		kinds = append(kinds, opDelete)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })

	live := make([]string, 0, c.o.objects+c.o.creates)
	for i := range c.o.objects {
		live = append(live, fmt.Sprintf("cm-%06d", i))
	}
	queues := make([]chan op, c.o.workers)
	var wg sync.WaitGroup
	for w := range queues {
		queues[w] = make(chan op, 64)
		wg.Go(func() {
			for o := range queues[w] {
				c.do(ctx, o)
			}
		})
	}
	interval := time.Duration(float64(time.Second) / c.o.rate)
	start := time.Now()
	created := 0
	for i, k := range kinds {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		o := op{kind: k, i: i}
		switch {
		case k == opCreate || len(live) == 0:
			o.kind = opCreate
			o.name = fmt.Sprintf("new-%06d", created)
			created++
			live = append(live, o.name)
		case k == opUpdate:
			o.name = live[rng.IntN(len(live))]
		default:
			j := rng.IntN(len(live))
			o.name = live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(o.name))
		select {
		case queues[h.Sum32()%uint32(len(queues))] <- o:
		case <-ctx.Done():
		}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.firstErrs) > 0 {
		logf("churn errors (first %d): %s", len(c.firstErrs), strings.Join(c.firstErrs, "; "))
	}
	return nil
}

func (c *churn) do(ctx context.Context, o op) {
	opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cms := c.cs.CoreV1().ConfigMaps(namespace)
	var err error
	switch o.kind {
	case opCreate:
		_, err = cms.Create(opCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: o.name}, Data: data(1_000_000+o.i, c.o.size)}, metav1.CreateOptions{})
		if err == nil {
			c.creates.Add(1)
		}
	case opUpdate:
		patch := fmt.Sprintf(`{"data":{"rev":"%d"}}`, o.i)
		_, err = cms.Patch(opCtx, o.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
			c.updates.Add(1)
		}
	case opDelete:
		err = cms.Delete(opCtx, o.name, metav1.DeleteOptions{})
		if err == nil {
			c.deletes.Add(1)
		}
	}
	c.done.Add(1)
	if err != nil && ctx.Err() == nil {
		c.failed.Add(1)
		c.mu.Lock()
		if len(c.firstErrs) < 5 {
			c.firstErrs = append(c.firstErrs, fmt.Sprintf("%s: %v", o.name, err))
		}
		c.mu.Unlock()
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/shard"
)

// layout is where the benchmark's objects live: one namespace, or
// -namespaces of them, object i in namespace i mod their number.
type layout struct {
	namespaces int
	// named makes bridge modes name the namespaces rather than watch
	// every namespace with the benchmark's label.
	named bool
}

// namespace is the namespace of object (or churn object) i.
func (l layout) namespace(i int) string {
	if l.namespaces <= 1 {
		return benchNamespace
	}
	return fmt.Sprintf("%s-%03d", benchNamespace, i%l.namespaces)
}

// all is every namespace the benchmark uses.
func (l layout) all() []string {
	var out []string
	for i := range max(l.namespaces, 1) {
		out = append(out, l.namespace(i))
	}
	return out
}

// benchLabel marks every object the benchmark makes: with several
// namespaces, informers list all namespaces with it as label selector.
const benchLabel = "app=bench-versus"

// createObjects creates the namespaces and n objects of kind ok of about
// size bytes of data each, with several goroutines.
func createObjects(ctx context.Context, c clients, ok *objectKind, l layout, n, size, workers int) error {
	for _, name := range l.all() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := c.typed.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if ok.install != nil {
		if err := ok.install(ctx, c); err != nil {
			return err
		}
	}
	start := time.Now()
	err := benchkit.Parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		return ok.create(ctx, c, l.namespace(i), objectName(i), uint64(i), size)
	}, func(d int) {
		if d%2000 == 0 || d == n {
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, "created %d/%d %s in %v (%.0f/s)\n", d, n, ok.plural, el.Round(time.Millisecond), float64(d)/el.Seconds())
		}
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", ok.plural, err)
	}
	return nil
}

func objectName(i int) string { return fmt.Sprintf("cm-%06d", i) }

// owned tells whether mode m sees the object namespace/name: every object,
// but for a shard mode only its shard's.
func (b *bench) owned(m mode, namespace, name string) bool {
	return !m.kind.sharded || shard.Owns(m.shard, namespace, name)
}

// mixOf is the part of the churn mode m publishes.
func (b *bench) mixOf(m mode) churnMix {
	var out churnMix
	for k := range b.churn.mix.total() {
		kind, j := b.churn.mix.at(k)
		if !b.owned(m, b.namespaceOf(kind, j), "") {
			continue
		}
		switch kind {
		case create:
			out.creates++
		case update:
			out.updates++
		case clusterChange:
			out.cluster++
		default:
			out.deletes++
		}
	}
	return out
}

// objectsOf is how many of the preloaded objects mode m caches.
func (b *bench) objectsOf(m mode) int {
	n := 0
	for i := range b.objects {
		if b.owned(m, b.layout.namespace(i), objectName(i)) {
			n++
		}
	}
	return n
}

// eventsOf is how many of the churn's events mode m sees.
func (b *bench) eventsOf(m mode) int {
	n := 0
	for k := range b.churn.mix.total() {
		if b.owned(m, b.namespaceOf(b.churn.mix.at(k)), "") {
			n++
		}
	}
	return n
}

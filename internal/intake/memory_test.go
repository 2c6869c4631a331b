package intake

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Memory cost per object of the intake, measured as the growth of the live
// heap (runtime.GC, then MemStats.HeapAlloc) around filling it, with the
// objects of internal/bridge's BenchmarkGuardMemory. Results go to
// docs/memory.md:
//
//	go test -run '^$' -bench 'GuardMemory|IntakeMemory' ./internal/bridge/ ./internal/intake/
//
// ns/op is the time to build, fill and measure one round and means nothing
// here; B/object is the result. Nothing is asserted about time.

// memCache is a CacheReader over a client-go indexer, as informers.Source
// reads the informer's.
type memCache struct{ idx cache.Indexer }

func (m memCache) Keys() []string { return m.idx.ListKeys() }
func (m memCache) Get(key string) (obj kruntime.Object, ok bool) {
	o, ok, err := m.idx.GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	return o.(kruntime.Object), true
}

// BenchmarkIntakeMemory reports the live heap the intake adds per object
// while a change of it waits: the objectState, its queue of one pending
// entry, the map slot, the "namespace/name" key and the ready FIFO's slot.
// The objects themselves are kept alive by the benchmark and not counted:
// the new object is the informer cache's. The old object of a waiting
// update is not counted either, though the cache no longer holds it: see
// docs/memory.md.
//
//   - changes=1: one update per object;
//   - changes=3: three updates per object, merged into one pending entry;
//   - snapshot: a snapshot's begin lists the cache's keys, which stay
//     listed until the snapshot ends (the key strings are the indexer's).
func BenchmarkIntakeMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, changes := range []int{1, 3} {
			b.Run(fmt.Sprintf("n=%d/changes=%d", n, changes), func(b *testing.B) {
				var sum float64
				for range b.N {
					// versions[v][i] is object i at version v; all stay alive.
					versions := make([][]*corev1.ConfigMap, changes+1)
					for v := range versions {
						versions[v] = make([]*corev1.ConfigMap, n)
						for i := range n {
							versions[v][i] = fixtures.MemoryConfigMap(i, v)
						}
					}
					now := time.Now()
					before := fixtures.LiveHeap()
					in := New(time.Now, noReports)
					for v := 1; v <= changes; v++ {
						for i := range n {
							in.Add(informers.Change{Verb: informers.Updated, Resource: configMaps, Object: versions[v][i], OldObject: versions[v-1][i], ObservedAt: now})
						}
					}
					if got := in.PendingObjects(); got != n {
						b.Fatalf("%d objects pending, want %d", got, n)
					}
					sum += fixtures.PerObject(before, fixtures.LiveHeap(), n)
					runtime.KeepAlive(in)
					runtime.KeepAlive(versions)
				}
				b.ReportMetric(sum/float64(b.N), "B/object")
			})
		}
		b.Run(fmt.Sprintf("n=%d/snapshot", n), func(b *testing.B) {
			var sum float64
			for range b.N {
				idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
				for i := range n {
					if err := idx.Add(fixtures.MemoryConfigMap(i, i)); err != nil {
						b.Fatal(err)
					}
				}
				in := New(time.Now, noReports)
				before := fixtures.LiveHeap()
				in.RequestSnapshot(configMaps, memCache{idx}, informers.Scope{}, "s1")
				in.mu.Lock()
				w, ok := in.take(true)
				in.mu.Unlock()
				if !ok || w.Change.Verb != informers.SnapshotBegin || len(w.run.keys) != n {
					b.Fatalf("took %v %s, want the begin marker with %d keys listed", ok, w.Change.Verb, n)
				}
				sum += fixtures.PerObject(before, fixtures.LiveHeap(), n)
				runtime.KeepAlive(in)
				runtime.KeepAlive(idx)
			}
			b.ReportMetric(sum/float64(b.N), "B/object")
		})
	}
}

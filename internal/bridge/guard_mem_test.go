package bridge

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Memory cost per object of the pipeline's order guard (the intake's is
// BenchmarkIntakeMemory in internal/intake), measured as the growth of the
// live heap (runtime.GC, then MemStats.HeapAlloc) around filling it.
// Results go to docs/memory.md:
//
//	go test -run '^$' -bench 'GuardMemory|IntakeMemory' ./internal/bridge/ ./internal/intake/
//
// ns/op is the time to build, fill and measure one round and means nothing
// here; B/object is the result. Nothing is asserted about time.

var memCM = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// BenchmarkGuardMemory fills an orderGuard with n objects and reports the
// live heap it adds per object.
//
//   - strings=shared: the objects stay alive, as the informer cache keeps
//     them. This is the steady state.
//
//   - strings=fresh: the objects are garbage once admitted, as while the
//     cache has replaced an object and the guard has not seen the newer
//     version yet (publishing behind, NATS away). The guard keeps a hash
//     of the uid and the resourceVersion as a number, no string, so this
//     must cost what strings=shared does.
//
//   - room=made: the guard makes room for the n objects first, as it does
//     at a snapshot's begin (orderGuard.expect), rather than growing as
//     they come.
//
// Two more metrics show what pruning does: pruned-B/object is what stays
// after a snapshot's sweep forgot every object (a Go map keeps its tables
// after deletes), churned-B/object what the guard holds after three more
// rounds of n new uids, each followed by a sweep, then n more new uids.
// The new uids are new objects, garbage once admitted.
func BenchmarkGuardMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, v := range []struct {
			strs string
			room bool
		}{{"shared", false}, {"fresh", false}, {"shared", true}} {
			strs, room := v.strs, v.room
			name := fmt.Sprintf("n=%d/strings=%s", n, strs)
			if room {
				name += "/room=made"
			}
			b.Run(name, func(b *testing.B) {
				var sum, pruned, churned float64
				for range b.N {
					var objs []*corev1.ConfigMap
					if strs == "shared" {
						objs = make([]*corev1.ConfigMap, n)
						for i := range objs {
							objs[i] = fixtures.MemoryConfigMap(i, i)
						}
					}
					object := func(i, round int) *corev1.ConfigMap {
						if objs != nil && round == 0 {
							return objs[i]
						}
						// Later rounds are new objects: new uids.
						return fixtures.MemoryConfigMap(i+round*n, i)
					}
					before := fixtures.LiveHeap()
					g := newOrderGuard()
					if room {
						g.expect(memCM, n)
					}
					fill := func(round int) {
						for i := range n {
							c := informers.Change{Verb: informers.SnapshotItem, Resource: memCM, Object: object(i, round)}
							if !g.admit(&c) {
								b.Fatalf("object %d not admitted", i)
							}
						}
					}
					sweep := func() {
						// A snapshot that found none of them: its end forgets all.
						g.admit(&informers.Change{Verb: informers.SnapshotBegin, Resource: memCM})
						g.admit(&informers.Change{Verb: informers.SnapshotEnd, Resource: memCM})
					}
					fill(0)
					if g.size() != n {
						b.Fatalf("guard holds %d objects, want %d", g.size(), n)
					}
					sum += fixtures.PerObject(before, fixtures.LiveHeap(), n)

					sweep()
					if g.size() != 0 {
						b.Fatalf("guard holds %d objects after the sweep, want 0", g.size())
					}
					pruned += fixtures.PerObject(before, fixtures.LiveHeap(), n)

					for round := 1; round <= 3; round++ {
						fill(round)
						sweep()
					}
					fill(4)
					churned += fixtures.PerObject(before, fixtures.LiveHeap(), n)
					runtime.KeepAlive(g)
					runtime.KeepAlive(objs)
				}
				b.ReportMetric(sum/float64(b.N), "B/object")
				b.ReportMetric(pruned/float64(b.N), "pruned-B/object")
				b.ReportMetric(churned/float64(b.N), "churned-B/object")
			})
		}
	}
}

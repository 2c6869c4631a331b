package consume

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// listOnly is a ListWatch that tells client-go's reflector it does not
// stream a watch-list, so that the reflector lists: how an informer over
// a ListWatch filled its cache before d46f84e.
type listOnly struct{ *ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// BenchmarkInformerSync times, on one stream of 10,000 ConfigMaps, an
// informer over a ListWatch from its start until synced, when the
// reflector streams a watch-list (the default) and when it lists; each
// iteration runs both, in alternating order, and reports each one's time
// per object and their ratio.
//
//	go test -run '^$' -bench InformerSync -benchtime 6x -count 3 ./pkg/consume
func BenchmarkInformerSync(b *testing.B) {
	js := benchStream(b)
	client := testClient(b, js)
	sync := func(wrap func(*ListWatch) cache.ListerWatcher) time.Duration {
		lw, err := client.NewListWatch(Filter{Resource: "configmaps"}, &corev1.ConfigMap{})
		if err != nil {
			b.Fatal(err)
		}
		inf := cache.NewSharedIndexInformer(wrap(lw), &corev1.ConfigMap{}, 0, cache.Indexers{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		go inf.RunWithContext(ctx)
		for !inf.HasSynced() {
			if time.Since(start) > time.Minute {
				b.Fatal("not synced within a minute")
			}
			time.Sleep(time.Millisecond)
		}
		took := time.Since(start)
		if n := len(inf.GetStore().ListKeys()); n != benchObjects {
			b.Fatalf("synced with %d objects", n)
		}
		return took
	}
	watchList := func(lw *ListWatch) cache.ListerWatcher { return lw }
	list := func(lw *ListWatch) cache.ListerWatcher { return listOnly{lw} }
	var wl, l time.Duration
	for i := range b.N {
		if i%2 == 0 {
			wl += sync(watchList)
			l += sync(list)
		} else {
			l += sync(list)
			wl += sync(watchList)
		}
	}
	per := float64(b.N * benchObjects)
	b.ReportMetric(float64(wl.Nanoseconds())/per, "watchlist-ns/object")
	b.ReportMetric(float64(l.Nanoseconds())/per, "list-ns/object")
	b.ReportMetric(float64(wl)/float64(l), "watchlist/list")
}

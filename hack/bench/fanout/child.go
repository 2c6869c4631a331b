package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

// A consumer child ("fanout child informer|stream -flag ...") runs one
// shared informer of the benchmark's ConfigMaps and speaks to the parent
// in JSON lines on stdout: "synced" once its cache is (with the seconds
// since the process started and the objects it holds), "marker" once it
// has seen the marker ConfigMap carry this setup's token, and "state" (the
// objects it holds and their digest) for each line "state" on stdin. It
// ends when stdin closes.

// childEvent is one JSON line of a consumer child.
type childEvent struct {
	Event   string  `json:"event"`
	Secs    float64 `json:"secs,omitempty"`
	Objects int     `json:"objects,omitempty"`
	Digest  string  `json:"digest,omitempty"`
}

// The consumer's sources.
const (
	sourceInformer = "informer"
	sourceStream   = "stream"
)

type childFlags struct {
	source, kubeconfig, natsURL, marker string
	// heapProfile is where to write the heap profile as the child ends.
	heapProfile string
	// bootstrap is how a stream consumer bootstraps (-bootstrap).
	bootstrap string
}

func child(args []string) error {
	start := time.Now()
	if len(args) < 1 {
		return errors.New("usage: child informer|stream -kubeconfig PATH -nats URL -marker TOKEN")
	}
	f := childFlags{source: args[0]}
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the API server (informer)")
	fs.StringVar(&f.natsURL, "nats", "", "URL of the NATS server (stream)")
	fs.StringVar(&f.marker, "marker", "", "the setup's token in the marker ConfigMap")
	fs.StringVar(&f.bootstrap, "bootstrap", "full-replay", "how a stream consumer bootstraps: full-replay or last-per-subject")
	fs.StringVar(&f.heapProfile, "heapprofile", "", "write the heap profile here, after a GC, as the child ends")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	inf, closeSource, err := newInformer(f)
	if err != nil {
		return err
	}
	defer closeSource()
	// Cancelled before the source closes (deferred calls run last first).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &emitter{enc: json.NewEncoder(os.Stdout)}
	if _, err := inf.AddEventHandler(markerHandler(f.marker, out)); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	// Every 10 ms, not cache.WaitForCacheSync's 100: a list of 2,000
	// objects takes a few tenths of a second.
	err = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return inf.HasSynced(), nil })
	if err != nil {
		return fmt.Errorf("cache did not sync: %w", err)
	}
	if err := out.emit(childEvent{Event: "synced", Secs: time.Since(start).Seconds(), Objects: len(inf.GetStore().ListKeys())}); err != nil {
		return err
	}
	if err := answer(inf.GetStore(), out); err != nil {
		return err
	}
	return writeHeapProfile(f.heapProfile)
}

// writeHeapProfile writes the heap profile to path, after a GC so that it
// shows what is live; nothing when path is "".
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	runtime.GC()
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(file); err != nil {
		_ = file.Close()
		return err
	}
	return file.Close()
}

// newInformer is the consumer's informer of the benchmark namespace's
// ConfigMaps: client-go's, as client-go sets it up, on the API server; or
// pkg/consume's over the bridge's stream, with the same namespace index.
func newInformer(f childFlags) (cache.SharedIndexInformer, func(), error) {
	switch f.source {
	case sourceInformer:
		rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		rc.UserAgent = "kubebridge-bench-fanout"
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, nil, err
		}
		factory := kinformers.NewSharedInformerFactoryWithOptions(cs, 0, kinformers.WithNamespace(benchNamespace))
		return factory.Core().V1().ConfigMaps().Informer(), func() {}, nil
	case sourceStream:
		// nats.go reports what it drops (a slow consumer) only here.
		logAsync := nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			fmt.Fprintf(os.Stderr, "child: nats: %v (subscription %q)\n", err, subject)
		})
		js, closeConn, err := benchkit.ConnectJetStream(f.natsURL, nats.Name("kubebridge-bench-fanout"), logAsync)
		if err != nil {
			return nil, nil, err
		}
		client, err := consume.New(js, consume.WithStream(benchStream), consume.WithSubjectPrefix(benchPrefix), consume.WithCluster(benchCluster))
		if err != nil {
			closeConn()
			return nil, nil, err
		}
		mode, err := bootstrapMode(f.bootstrap)
		if err != nil {
			closeConn()
			return nil, nil, err
		}
		inf, err := client.NewSharedIndexInformer(consume.Filter{Resource: "configmaps", Namespace: benchNamespace}, &corev1.ConfigMap{}, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, consume.Bootstrap(mode))
		if err != nil {
			closeConn()
			return nil, nil, err
		}
		return inf, closeConn, nil
	}
	return nil, nil, fmt.Errorf("unknown consumer source %q (want %s or %s)", f.source, sourceInformer, sourceStream)
}

// emitter writes the child's JSON lines, one at a time.
type emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (e *emitter) emit(ev childEvent) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(ev)
}

// markerHandler says "marker" once the marker ConfigMap carries token.
func markerHandler(token string, out *emitter) cache.ResourceEventHandler {
	var once sync.Once
	seen := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || cm.Name != markerName || cm.Data[markerKey] != token {
			return
		}
		once.Do(func() {
			if err := out.emit(childEvent{Event: "marker"}); err != nil {
				fmt.Fprintf(os.Stderr, "child: %v\n", err)
			}
		})
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}
}

// answer says the cache's state for each "state" line on stdin, until
// stdin closes.
func answer(store cache.Store, out *emitter) error {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "state" {
			return fmt.Errorf("parent said %q, want state", in.Text())
		}
		st, err := storeState(store)
		if err != nil {
			return err
		}
		if err := out.emit(childEvent{Event: "state", Objects: st.Objects, Digest: st.Digest}); err != nil {
			return err
		}
	}
	return in.Err()
}

// storeState is what an informer's cache holds.
func storeState(store cache.Store) (state, error) {
	var keys []objectVersion
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			return state{}, err
		}
		keys = append(keys, objectVersion{key: m.GetNamespace() + "/" + m.GetName(), rv: m.GetResourceVersion()})
	}
	return stateOf(keys), nil
}

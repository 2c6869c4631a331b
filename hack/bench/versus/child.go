package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

func child(args []string) error {
	if len(args) < 1 {
		return errors.New("usage: child <mode> -kubeconfig PATH -nats URL")
	}
	name := args[0]
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	natsURL := fs.String("nats", "", "NATS URL")
	stream := fs.String("stream", "", "stream of a bridge mode")
	budget := fs.String("budget", "", "BRIDGE_PUBLISH_BUFFER_BYTES of a bridge mode; empty is the default")
	settle := fs.Duration("settle", 2*time.Second, "sleep after runtime.GC() before measuring")
	churnCPUProfile := fs.String("churn-cpuprofile", "", "with -wait, write a CPU profile of the churn here")
	readyCPUProfile := fs.String("ready-cpuprofile", "", "write a CPU profile from the start to ready here")
	heapProfile := fs.String("heapprofile", "", "write a heap profile here after the last measurement, and one at the peak of the live heap next to it (-peak.pprof)")
	noGzip := fs.Bool("no-gzip", false, "set rest.Config.DisableCompression")
	wait := fs.Bool("wait", false, `after the first measurement, wait for "measure N" on stdin, then for N informer events, and measure again`)
	namespaces := fs.Int("namespaces", 1, "the objects' namespaces: with more than one, informers watch all namespaces with the benchmark's label selector")
	shardFlag := fs.String("shard", "0/1", "the shard i/N of the typed-shard mode")
	named := fs.Bool("named-namespaces", false, "with -namespaces N, a bridge mode names the namespaces instead of watching every one with the benchmark's label")
	scrapeEvery := fs.Duration("scrape-interval", 15*time.Second, "how often a bridge mode's /metrics is read for its pending and buffer gauges")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.DisableCompression = *noGzip
	rc.UserAgent = "kubebridge-bench-versus/" + name
	// The informer modes' clients; a bridge mode builds its own below, as
	// cmd/bridge sets them up.
	var kube bridge.Kube
	if !strings.HasPrefix(name, "bridge-") {
		if kube, err = bridge.KubeFromREST(rc); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().WithName(name))
	pk := peaks{scrapeEvery: *scrapeEvery}
	if *heapProfile != "" {
		pk.peakProfile = strings.TrimSuffix(*heapProfile, ".pprof") + "-peak.pprof"
	}
	go pk.run(ctx)

	transform := informers.TransformOptions{StripManagedFields: true, StripLastApplied: true}.Transform()
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	stopReadyProfile, err := startCPUProfile(*readyCPUProfile)
	if err != nil {
		return err
	}
	start := time.Now()
	objects := -1
	var stopBridge func() error
	// rawPublish is the publish-raw mode's time to publish its objects.
	var rawPublish time.Duration
	// events counts notifications after the initial list, with -wait
	// only: a handler would change what the plain informer rows measure.
	var events atomic.Int64
	counter := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ interface{}, isInInitialList bool) {
			if !isInInitialList {
				events.Add(1)
			}
		},
		UpdateFunc: func(_, _ interface{}) { events.Add(1) },
		DeleteFunc: func(interface{}) { events.Add(1) },
	}

	// Where the objects are: one namespace, or all namespaces and the
	// benchmark's label.
	namespace, tweak := benchNamespace, func(*metav1.ListOptions) {}
	if *namespaces > 1 {
		namespace, tweak = metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = benchLabel }
	}
	// gcPercent is the collector's target when the child set it (the
	// bridge modes), else 0: GOGC, or Go's default, applies.
	gcPercent := 0
	// gzip is whether the API server's responses are gzipped for this
	// child: client-go's default unless -no-gzip; a bridge mode's own
	// setting.
	gzip := !rc.DisableCompression
	switch name {
	case "baseline":
		objects = -1
	case "typed", "typed-transform", "publish-raw", "publish-raw-items":
		opts := []kinformers.SharedInformerOption{kinformers.WithNamespace(namespace), kinformers.WithTweakListOptions(tweak)}
		if name != "typed" {
			opts = append(opts, kinformers.WithTransform(transform))
		}
		f := kinformers.NewSharedInformerFactoryWithOptions(kube.Clients.Typed, 0, opts...)
		inf := f.Core().V1().ConfigMaps().Informer()
		var err error
		if objects, err = startInformer(ctx, f.Start, inf, counter, *wait); err != nil {
			return err
		}
		defer runtime.KeepAlive(inf)
		if strings.HasPrefix(name, "publish-raw") {
			raw := bridgeChild{mode: name, namespace: namespace, natsURL: *natsURL, stream: *stream}
			if rawPublish, err = publishRaw(ctx, inf.GetStore(), raw, name == "publish-raw-items"); err != nil {
				return err
			}
		}
	case "dynamic", "dynamic-transform":
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(kube.Clients.Dynamic, 0, namespace, tweak)
		inf := f.ForResource(gvr).Informer()
		if name == "dynamic-transform" {
			if err := inf.SetTransform(transform); err != nil {
				return err
			}
		}
		var err error
		if objects, err = startInformer(ctx, f.Start, inf, counter, *wait); err != nil {
			return err
		}
		defer runtime.KeepAlive(inf)
	case "typed-shard":
		// The shard's part only, through the Source the bridge builds:
		// objects of other shards never reach the cache.
		sh, err := contract.ParseShard(*shardFlag)
		if err != nil {
			return err
		}
		scope := informers.Scope{Namespaces: []string{namespace}}
		if *namespaces > 1 {
			scope = informers.Scope{LabelSelector: benchLabel}
		}
		q := countingQueue{events: &events, wait: *wait}
		src, err := informers.NewSource(kube.Clients, &informers.Resource{GVR: gvr, Kind: "ConfigMap", Namespaced: true}, scope, nil, q, informers.WithOwns(shard.Owner(sh)))
		if err != nil {
			return err
		}
		src.Run(ctx)
		if !cache.WaitForCacheSync(ctx.Done(), src.HasSynced) {
			return errors.New("cache did not sync")
		}
		objects = len(src.Keys())
		defer runtime.KeepAlive(src)
	case "bridge-typed", "bridge-dynamic", "bridge-shard":
		b := bridgeChild{mode: name, namespace: namespace, natsURL: *natsURL, stream: *stream, budget: *budget, shard: *shardFlag,
			namespaces: *namespaces, named: *named, rest: rc, peaks: &pk}
		running, err := b.start(ctx)
		if err != nil {
			return err
		}
		stopBridge, gzip, gcPercent = running.stop, running.gzip, running.gcPercent
	default:
		return fmt.Errorf("unknown mode %q", name)
	}
	ready := time.Since(start)
	if err := stopReadyProfile(); err != nil {
		return err
	}

	measure := func(phase string) error {
		start := readUsage()
		runtime.GC()
		runtime.GC()
		time.Sleep(*settle)
		r := result{Mode: name, Phase: phase, Objects: objects, ReadySecs: ready.Seconds(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
			GOGC: gogcReport(gcPercent), GOMEMLIMIT: os.Getenv("GOMEMLIMIT"), Events: events.Load(), Gzip: gzip}
		r.VmRSSKiB, r.VmHWMKiB = procStatus()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapInuse, r.HeapAlloc, r.HeapSys, r.Sys, r.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.HeapSys, ms.Sys, ms.NumGC
		pk.fill(&r)
		if u := pk.metricsURL.Load(); u != nil {
			r.bridgeTotals = scrapeTotals(*u)
		} else if rawPublish > 0 {
			r.SnapshotSecs = rawPublish.Seconds()
		}
		debug.FreeOSMemory()
		r.FreedRSS, _ = procStatus()
		r.Start, r.End = start, readUsage()
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Println(string(line))
		return nil
	}
	if err := measure("ready"); err != nil {
		return err
	}
	if *wait {
		stopProfile, err := startCPUProfile(*churnCPUProfile)
		if err != nil {
			return err
		}
		if err := awaitChurn(ctx, objects >= 0, &events); err != nil {
			return err
		}
		if err := stopProfile(); err != nil {
			return err
		}
		if err := measure("churn"); err != nil {
			return err
		}
	}
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			return err
		}
	}
	if stopBridge != nil {
		return stopBridge()
	}
	return nil
}

// gogcReport is what the child reports as its GOGC: the target it set, or
// the environment's.
func gogcReport(set int) string {
	if set != 0 {
		return strconv.Itoa(set)
	}
	return os.Getenv("GOGC")
}

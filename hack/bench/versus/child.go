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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/bridge"
)

// childFlags are what the parent tells a child (runChild's childArgs and
// profileArgs): the child protocol, which an older build given as +exe=
// must understand too.
type childFlags struct {
	kubeconfig, natsURL, stream string
	budget                      string
	settle, scrapeEvery         time.Duration
	churnCPUProfile             string
	readyCPUProfile             string
	heapProfile                 string
	noGzip, wait, named, pods   bool
	namespaces                  int
	shard                       string
}

// parseChildFlags reads "child <mode> -flag ...": the mode's row and the
// flags.
func parseChildFlags(args []string) (*modeKind, childFlags, error) {
	var f childFlags
	if len(args) < 1 {
		return nil, f, errors.New("usage: child <mode> -kubeconfig PATH -nats URL")
	}
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig")
	fs.StringVar(&f.natsURL, "nats", "", "NATS URL")
	fs.StringVar(&f.stream, "stream", "", "stream of a bridge mode")
	fs.StringVar(&f.budget, "budget", "", "BRIDGE_PUBLISH_BUFFER_BYTES of a bridge mode; empty is the default")
	fs.DurationVar(&f.settle, "settle", 2*time.Second, "sleep after runtime.GC() before measuring")
	fs.StringVar(&f.churnCPUProfile, "churn-cpuprofile", "", "with -wait, write a CPU profile of the churn here")
	fs.StringVar(&f.readyCPUProfile, "ready-cpuprofile", "", "write a CPU profile from the start to ready here")
	fs.StringVar(&f.heapProfile, "heapprofile", "", "write a heap profile here after the last measurement, and one at the peak of the live heap next to it (-peak.pprof); and the size classes at each measurement (-<phase>-size-classes.txt)")
	fs.BoolVar(&f.noGzip, "no-gzip", false, "set rest.Config.DisableCompression")
	fs.BoolVar(&f.wait, "wait", false, `after the first measurement, wait for "measure N" on stdin, then for N informer events, and measure again`)
	fs.IntVar(&f.namespaces, "namespaces", 1, "the objects' namespaces: with more than one, informers watch all namespaces with the benchmark's label selector")
	fs.StringVar(&f.shard, "shard", "0/1", "the shard i/N of the typed-shard mode")
	fs.BoolVar(&f.named, "named-namespaces", false, "with -namespaces N, a bridge mode names the namespaces instead of watching every one with the benchmark's label")
	fs.BoolVar(&f.pods, "pods", false, "a bridge mode watches Pods besides the ConfigMaps")
	fs.DurationVar(&f.scrapeEvery, "scrape-interval", 15*time.Second, "how often a bridge mode's /metrics is read for its pending and buffer gauges")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, f, err
	}
	k := kindNamed(args[0])
	if k == nil {
		return nil, f, fmt.Errorf("unknown mode %q", args[0])
	}
	return k, f, nil
}

// childRun is a child process: its mode's row, its flags, and what its
// measurements read.
type childRun struct {
	kind  *modeKind
	flags childFlags
	rest  *rest.Config
	// kube is the informer modes' clients; a bridge mode builds its own,
	// as cmd/bridge sets them up.
	kube  bridge.Kube
	peaks *peaks
	// events counts notifications after the initial list, with -wait
	// only: a handler would change what the plain informer rows measure.
	// typed-publish counts its publishes settled instead.
	events atomic.Int64
	// namespace and tweak are where the objects are: one namespace, or
	// all namespaces and the benchmark's label.
	namespace string
	tweak     func(*metav1.ListOptions)
}

func child(args []string) error {
	k, f, err := parseChildFlags(args)
	if err != nil {
		return err
	}
	c, err := newChildRun(k, f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().WithName(k.name))
	go c.peaks.run(ctx)

	stopReadyProfile, err := benchkit.StartCPUProfile(f.readyCPUProfile)
	if err != nil {
		return err
	}
	start := time.Now()
	st, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(st.keep)
	ready := time.Since(start)
	if err := stopReadyProfile(); err != nil {
		return err
	}
	if err := c.measure("ready", st, ready); err != nil {
		return err
	}
	if f.wait {
		if err := c.churn(ctx, st, ready); err != nil {
			return err
		}
	}
	if f.heapProfile != "" {
		if err := writeHeapProfile(f.heapProfile); err != nil {
			return err
		}
	}
	if st.stop != nil {
		return st.stop()
	}
	return nil
}

func newChildRun(k *modeKind, f childFlags) (*childRun, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.DisableCompression = f.noGzip
	rc.UserAgent = "kubebridge-bench-versus/" + k.name
	c := &childRun{kind: k, flags: f, rest: rc, peaks: &peaks{scrapeEvery: f.scrapeEvery},
		namespace: benchNamespace, tweak: func(*metav1.ListOptions) {}}
	if !k.runs.bridge() {
		if c.kube, err = bridge.KubeFromREST(rc); err != nil {
			return nil, err
		}
	}
	if f.heapProfile != "" {
		c.peaks.peakProfile = strings.TrimSuffix(f.heapProfile, ".pprof") + "-peak.pprof"
	}
	if f.namespaces > 1 {
		c.namespace, c.tweak = metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = benchLabel }
	}
	return c, nil
}

// churn waits for the parent's "measure N" and, for an informer, its N
// events, and measures again.
func (c *childRun) churn(ctx context.Context, st cached, ready time.Duration) error {
	stopProfile, err := benchkit.StartCPUProfile(c.flags.churnCPUProfile)
	if err != nil {
		return err
	}
	if err := awaitChurn(ctx, st.objects >= 0, &c.events); err != nil {
		return err
	}
	if st.failed != nil {
		if err := st.failed(); err != nil {
			return err
		}
	}
	if err := stopProfile(); err != nil {
		return err
	}
	return c.measure("churn", st, ready)
}

// measure prints one JSON line: the child's memory and what it used, after
// a collection and a pause of -settle.
func (c *childRun) measure(phase string, st cached, ready time.Duration) error {
	start := readUsage()
	runtime.GC()
	runtime.GC()
	// -settle: the pause between the collections and the measurement.
	time.Sleep(c.flags.settle)
	r := result{Mode: c.kind.name, Phase: phase, Objects: st.objects, ReadySecs: ready.Seconds(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOGC: gogcReport(st.gcPercent), GOMEMLIMIT: os.Getenv("GOMEMLIMIT"), Events: c.events.Load(), Gzip: st.gzip}
	r.VmRSSKiB, r.VmHWMKiB = procStatus()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if c.flags.heapProfile != "" {
		if err := writeSizeClasses(sizeClassesPath(c.flags.heapProfile, phase), &ms); err != nil {
			return err
		}
	}
	r.HeapInuse, r.HeapAlloc, r.HeapSys, r.Sys, r.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.HeapSys, ms.Sys, ms.NumGC
	c.peaks.fill(&r)
	if u := c.peaks.metricsURL.Load(); u != nil {
		r.bridgeTotals = scrapeTotals(*u)
	} else if st.rawPublish > 0 {
		r.SnapshotSecs = st.rawPublish.Seconds()
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

// gogcReport is what the child reports as its GOGC: the target it set, or
// the environment's.
func gogcReport(set int) string {
	if set != 0 {
		return strconv.Itoa(set)
	}
	return os.Getenv("GOGC")
}

// Command memory measures how much memory a process needs to hold a large
// set of ConfigMaps in an informer cache, comparing bare client-go informers
// (typed/protobuf and dynamic/unstructured, each with and without the
// bridge's transform) with the bridge itself on the typed and on the dynamic
// path. Results are recorded in docs/memory.md.
//
// The parent process starts a real etcd + kube-apiserver + NATS (see
// internal/testenv), creates the ConfigMaps, and then re-executes itself
// once per mode ("memory child <mode> ...") so that every resident set size
// is measured in a fresh process. Each child reports one JSON line on
// stdout; the parent prints a markdown table.
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) go run ./hack/bench/memory
//
// Flags: -objects (20000), -size (2048 bytes of data per ConfigMap),
// -modes (a comma-separated subset), -settle (2s, the pause between
// runtime.GC() and the measurement), -heapprofile DIR (write each child's
// heap profile for `go tool pprof -sample_index=inuse_space`).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

const benchNamespace = "bench-memory"

// mode is one way of caching the ConfigMaps, run in its own child process.
type mode struct {
	name  string
	label string
}

var modes = []mode{
	{"baseline", "baseline: clients only, no informer"},
	{"typed", "typed informer (protobuf)"},
	{"typed-transform", "typed informer + transform"},
	{"dynamic", "dynamic informer (unstructured, JSON)"},
	{"dynamic-transform", "dynamic informer + transform"},
	{"bridge-typed", "bridge, typed path"},
	{"bridge-dynamic", "bridge, dynamic path"},
}

// result is what a child reports, as one JSON line on stdout.
type result struct {
	Mode       string  `json:"mode"`
	Objects    int     `json:"objects"` // objects in the cache; -1 if the child cannot see it (bridge)
	VmRSSKiB   int64   `json:"vmRSSKiB"`
	VmHWMKiB   int64   `json:"vmHWMKiB"`
	FreedRSS   int64   `json:"rssAfterFreeOSMemoryKiB"`
	HeapInuse  uint64  `json:"heapInuse"`
	HeapAlloc  uint64  `json:"heapAlloc"`
	HeapSys    uint64  `json:"heapSys"`
	Sys        uint64  `json:"sys"`
	NumGC      uint32  `json:"numGC"`
	ReadySecs  float64 `json:"readySeconds"`
	GoVersion  string  `json:"goVersion"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	GOGC       string  `json:"gogc"`
	// StreamMsgs is filled in by the parent for the bridge modes.
	StreamMsgs uint64 `json:"-"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "child: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintf(os.Stderr, "memory: %v\n", err)
		os.Exit(1)
	}
}

// ---- parent ----

func parent() error {
	objects := flag.Int("objects", 20000, "number of ConfigMaps to create and cache")
	size := flag.Int("size", 2048, "bytes of data per ConfigMap (split over 4 keys)")
	only := flag.String("modes", "", "comma-separated modes to run (default all: "+modeNames()+")")
	workers := flag.Int("workers", 16, "goroutines creating ConfigMaps")
	settle := flag.Duration("settle", 2*time.Second, "how long each child sleeps after runtime.GC() before measuring")
	profiles := flag.String("heapprofile", "", "if set, a directory where each child writes <mode>.pprof (heap, after the measurement)")
	flag.Parse()
	if *objects < 1 || *size < 4 {
		return errors.New("-objects must be >= 1 and -size >= 4")
	}
	run, err := selectModes(*only)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{StartTimeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Fprintf(os.Stderr, "environment up in %v: kube-apiserver %s, nats %s\n", time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.NATSURL())

	rc := env.RESTConfig()
	rc.QPS, rc.Burst = 500, 1000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	serverVersion := "unknown"
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		serverVersion = v.GitVersion
	}
	if err := createObjects(ctx, cs, *objects, *size, *workers); err != nil {
		return err
	}
	kubeconfig := filepath.Join(env.Dir(), "bench-kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	var results []result
	for _, m := range run {
		r, err := runChild(ctx, self, m, kubeconfig, env.NATSURL(), *objects, *settle, *profiles)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		results = append(results, r)
	}

	printReport(os.Stdout, results, *objects, *size, serverVersion)
	return nil
}

func modeNames() string {
	var n []string
	for _, m := range modes {
		n = append(n, m.name)
	}
	return strings.Join(n, ",")
}

func selectModes(only string) ([]mode, error) {
	if only == "" {
		return modes, nil
	}
	var out []mode
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, m := range modes {
			if m.name == strings.TrimSpace(name) {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown mode %q (known: %s)", name, modeNames())
		}
	}
	return out, nil
}

// createObjects creates the namespace and n ConfigMaps of about size bytes
// of data each, with several goroutines.
func createObjects(ctx context.Context, cs kubernetes.Interface, n, size, workers int) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	start := time.Now()
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := createOne(ctx, cs, i, size); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				if d := done.Add(1); d%2000 == 0 || int(d) == n {
					el := time.Since(start)
					fmt.Fprintf(os.Stderr, "created %d/%d ConfigMaps in %v (%.0f/s)\n", d, n, el.Round(time.Millisecond), float64(d)/el.Seconds())
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("create ConfigMaps: %w", firstErr)
	}
	return ctx.Err()
}

func createOne(ctx context.Context, cs kubernetes.Interface, i, size int) error {
	rng := rand.New(rand.NewPCG(uint64(i), 0x6b75626562726964))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	const keys = 4
	data := make(map[string]string, keys)
	for k := range keys {
		b := make([]byte, size/keys)
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		data["key-"+strconv.Itoa(k)] = string(b)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i), Namespace: benchNamespace, Labels: map[string]string{"app": "bench-memory"}},
		Data:       data,
	}
	var err error
	for attempt := range 5 {
		_, err = cs.CoreV1().ConfigMaps(benchNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

func runChild(ctx context.Context, self string, m mode, kubeconfig, natsURL string, objects int, settle time.Duration, profiles string) (result, error) {
	fmt.Fprintf(os.Stderr, "==== %s: %s\n", m.name, m.label)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	args := []string{"child", m.name, "-kubeconfig", kubeconfig, "-nats", natsURL, "-settle", settle.String()}
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			return result{}, err
		}
		args = append(args, "-heapprofile", filepath.Join(profiles, m.name+".pprof"))
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("child: %w", err)
	}
	var r result
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	found := false
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return result{}, fmt.Errorf("child output %q: %w", line, err)
			}
			found = true
		}
	}
	if !found {
		return result{}, fmt.Errorf("child printed no result: %q", out)
	}
	if r.Objects >= 0 && r.Objects != objects {
		return result{}, fmt.Errorf("child cached %d objects, want %d", r.Objects, objects)
	}
	if strings.HasPrefix(m.name, "bridge-") {
		n, err := streamMsgs(ctx, natsURL, streamName(m.name))
		if err != nil {
			return result{}, err
		}
		r.StreamMsgs = n
		// begin marker + one item per object + end marker
		if n != uint64(objects)+2 {
			return result{}, fmt.Errorf("stream %s holds %d messages, want %d", streamName(m.name), n, objects+2)
		}
	}
	fmt.Fprintf(os.Stderr, "==== %s: RSS %.1f MiB, peak %.1f MiB, heap in-use %.1f MiB\n", m.name, kib(r.VmRSSKiB), kib(r.VmHWMKiB), mib(r.HeapInuse))
	return r, nil
}

func streamMsgs(ctx context.Context, url, name string) (uint64, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

func kib(k int64) float64  { return float64(k) / 1024 }
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func printReport(w *os.File, results []result, objects, size int, serverVersion string) {
	var base *result
	for i := range results {
		if results[i].Mode == "baseline" {
			base = &results[i]
		}
	}
	label := map[string]string{}
	for _, m := range modes {
		label[m.name] = m.label
	}
	fmt.Fprintf(w, "\n%d ConfigMaps, %d bytes of data each (4 keys), one namespace; every mode in a fresh child process.\n\n", objects, size)
	fmt.Fprintln(w, "| mode | RSS MiB | peak RSS MiB | RSS after FreeOSMemory MiB | Go heap in-use MiB | Go heap alloc MiB | heap in-use B/object | (heap − baseline) B/object | ready s |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range results {
		delta := "–"
		if base != nil && r.Mode != "baseline" {
			delta = strconv.FormatInt((int64(r.HeapInuse)-int64(base.HeapInuse))/int64(objects), 10)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %s | %.1f |\n",
			label[r.Mode], kib(r.VmRSSKiB), kib(r.VmHWMKiB), kib(r.FreedRSS), mib(r.HeapInuse), mib(r.HeapAlloc),
			r.HeapInuse/uint64(objects), delta, r.ReadySecs)
	}
	fmt.Fprintln(w)
	var goVersion, gogc string
	gmp := 0
	if len(results) > 0 {
		goVersion, gmp, gogc = results[0].GoVersion, results[0].GOMAXPROCS, results[0].GOGC
	}
	if gogc == "" {
		gogc = "unset (100)"
	}
	fmt.Fprintf(w, "Machine: %s %s/%s, GOMAXPROCS=%d (NumCPU %d), GOGC=%s, %s, %s RAM, kernel %s\n",
		goVersion, runtime.GOOS, runtime.GOARCH, gmp, runtime.NumCPU(), gogc, cpuModel(), memTotal(), kernel())
	fmt.Fprintf(w, "kube-apiserver %s, client-go %s\n", serverVersion, moduleVersion("k8s.io/client-go"))
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if k, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return fmt.Sprintf("%.1f GiB", float64(k)/(1<<20))
				}
			}
		}
	}
	return "unknown"
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}

func streamName(mode string) string {
	return "MEMBENCH_" + strings.ToUpper(strings.ReplaceAll(mode, "-", "_"))
}

// ---- child ----

func child(args []string) error {
	if len(args) < 1 {
		return errors.New("usage: child <mode> -kubeconfig PATH -nats URL")
	}
	name := args[0]
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig")
	natsURL := fs.String("nats", "", "NATS URL")
	settle := fs.Duration("settle", 2*time.Second, "sleep after runtime.GC() before measuring")
	heapProfile := fs.String("heapprofile", "", "write a heap profile here after measuring")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "kubebridge-bench-memory/" + name
	kube, err := bridge.KubeFromREST(rc)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().WithName(name))

	transform := informers.TransformOptions{StripManagedFields: true, StripLastApplied: true}.Transform()
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	start := time.Now()
	objects := -1
	var stopBridge func() error

	switch name {
	case "baseline":
		objects = -1
	case "typed", "typed-transform":
		opts := []kinformers.SharedInformerOption{kinformers.WithNamespace(benchNamespace)}
		if name == "typed-transform" {
			opts = append(opts, kinformers.WithTransform(transform))
		}
		f := kinformers.NewSharedInformerFactoryWithOptions(kube.Clients.Typed, 0, opts...)
		inf := f.Core().V1().ConfigMaps().Informer()
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return errors.New("cache did not sync")
		}
		objects = len(inf.GetStore().ListKeys())
		defer runtime.KeepAlive(inf)
	case "dynamic", "dynamic-transform":
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(kube.Clients.Dynamic, 0, benchNamespace, nil)
		inf := f.ForResource(gvr).Informer()
		if name == "dynamic-transform" {
			if err := inf.SetTransform(transform); err != nil {
				return err
			}
		}
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return errors.New("cache did not sync")
		}
		objects = len(inf.GetStore().ListKeys())
		defer runtime.KeepAlive(inf)
	case "bridge-typed", "bridge-dynamic":
		if name == "bridge-dynamic" {
			// Without a typed client NewSource falls back to the dynamic informer.
			kube = bridge.Kube{Clients: informers.Clients{Typed: nil, Dynamic: kube.Clients.Dynamic}, Discovery: kube.Discovery}
		}
		cfg, err := config.Load(ctx, envconfig.MapLookuper(map[string]string{
			"BRIDGE_RESOURCES":      "configmaps",
			"BRIDGE_NAMESPACES":     benchNamespace,
			"BRIDGE_CLUSTER_NAME":   "bench",
			"NATS_URL":              *natsURL,
			"BRIDGE_RESYNC_PERIOD":  "0",
			"BRIDGE_STREAM_NAME":    streamName(name),
			"BRIDGE_SUBJECT_PREFIX": "membench." + strings.ReplaceAll(name, "-", "_"),
		}))
		if err != nil {
			return err
		}
		nc, err := sink.Connect(ctx, *natsURL)
		if err != nil {
			return err
		}
		defer nc.Close()
		serveCtx, stopServe := context.WithCancel(ctx)
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- bridge.Serve(serveCtx, cfg, kube, nc, bridge.WithReady(func() { close(ready) })) }()
		select {
		case <-ready:
		case err := <-done:
			stopServe()
			return fmt.Errorf("bridge stopped before it was ready: %v", err)
		case <-time.After(10 * time.Minute):
			stopServe()
			return errors.New("bridge not ready after 10m")
		}
		stopBridge = func() error {
			stopServe()
			select {
			case err := <-done:
				return err
			case <-time.After(30 * time.Second):
				return errors.New("bridge did not stop within 30s")
			}
		}
	default:
		return fmt.Errorf("unknown mode %q", name)
	}
	ready := time.Since(start)

	runtime.GC()
	runtime.GC()
	time.Sleep(*settle)
	r := result{Mode: name, Objects: objects, ReadySecs: ready.Seconds(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), GOGC: os.Getenv("GOGC")}
	r.VmRSSKiB, r.VmHWMKiB = procStatus()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapInuse, r.HeapAlloc, r.HeapSys, r.Sys, r.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.HeapSys, ms.Sys, ms.NumGC
	debug.FreeOSMemory()
	r.FreedRSS, _ = procStatus()
	if *heapProfile != "" {
		f, err := os.Create(*heapProfile)
		if err != nil {
			return err
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}

	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	if stopBridge != nil {
		return stopBridge()
	}
	return nil
}

// procStatus returns VmRSS and VmHWM (peak RSS) in KiB.
func procStatus() (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

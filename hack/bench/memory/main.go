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
// stdout per measurement; the parent prints markdown tables.
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) go run ./hack/bench/memory
//
// Flags: -objects (20000), -size (2048 bytes of data per ConfigMap),
// -modes (a comma-separated subset; a bridge mode takes a publish buffer
// as a suffix, e.g. bridge-typed@8Mi for BRIDGE_PUBLISH_BUFFER_BYTES=8Mi),
// -settle (2s, the pause between runtime.GC() and the measurement),
// -heapprofile DIR (write each child's heap profile, after the last
// measurement and at the peak of its live heap, for `go tool pprof
// -sample_index=inuse_space`), -child-gomemlimit (GOMEMLIMIT of every child,
// as the deployment sets it to the pod's memory limit).
//
// With -churn N, once a child is ready (cache synced; for the bridge, the
// start-up snapshot stored) the parent updates N ConfigMaps, round robin, at
// -churn-rate per second, each time rewriting one of the four data keys, so
// every update event carries an old and a new object of -size bytes. With
// -nats-outage D the NATS server is stopped for D, -outage-after into the
// churn. The child measures again once it has seen every update (for the
// bridge: once the stream holds them all). -nats-max-payload raises the NATS
// server's max_payload (default 1 MiB), so large update events are stored
// whole instead of truncated. The large-object run in docs/memory.md:
//
//	go run ./hack/bench/memory -objects 300 -size 500000 -modes typed,bridge-typed,bridge-typed@8Mi \
//		-churn 600 -churn-rate 10 -nats-outage 10s -outage-after 10s -nats-max-payload 4194304 \
//		-child-gomemlimit 256MiB
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

const benchNamespace = "bench-memory"

// mode is one way of caching the ConfigMaps, run in its own child process.
type mode struct {
	name  string
	label string
	// budget is the bridge's BRIDGE_PUBLISH_BUFFER_BYTES; empty is the
	// default.
	budget string
	// noGzip sets rest.Config.DisableCompression: the apiserver's
	// responses are not gzipped (client-go asks for gzip by default).
	noGzip bool
}

var modes = []mode{
	{name: "baseline", label: "baseline: clients only, no informer"},
	{name: "typed", label: "typed informer (protobuf)"},
	{name: "typed-transform", label: "typed informer + transform"},
	{name: "dynamic", label: "dynamic informer (unstructured, JSON)"},
	{name: "dynamic-transform", label: "dynamic informer + transform"},
	{name: "bridge-typed", label: "bridge, typed path"},
	{name: "bridge-dynamic", label: "bridge, dynamic path"},
}

// id names a mode run: its name, with the budget if one is set.
func (m mode) id() string {
	id := m.name
	if m.budget != "" {
		id += "@" + m.budget
	}
	if m.noGzip {
		id += "+nogzip"
	}
	return id
}

func (m mode) isBridge() bool { return strings.HasPrefix(m.name, "bridge-") }

// result is what a child reports, as one JSON line on stdout per
// measurement.
type result struct {
	Mode string `json:"mode"`
	// Phase is "ready" (after the cache synced or the start-up snapshot
	// was stored) or "churn" (after the child saw every update).
	Phase     string  `json:"phase"`
	Objects   int     `json:"objects"` // objects in the cache; -1 if the child cannot see it (bridge)
	VmRSSKiB  int64   `json:"vmRSSKiB"`
	VmHWMKiB  int64   `json:"vmHWMKiB"`
	FreedRSS  int64   `json:"rssAfterFreeOSMemoryKiB"`
	HeapInuse uint64  `json:"heapInuse"`
	HeapAlloc uint64  `json:"heapAlloc"`
	HeapSys   uint64  `json:"heapSys"`
	Sys       uint64  `json:"sys"`
	NumGC     uint32  `json:"numGC"`
	ReadySecs float64 `json:"readySeconds"`
	// SnapshotSecs is the bridge's start-up snapshot, begin marker to the
	// end marker's acknowledgement (kubebridge_snapshot_duration_seconds);
	// 0 for an informer.
	SnapshotSecs float64 `json:"snapshotSeconds"`
	GoVersion    string  `json:"goVersion"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	GOGC         string  `json:"gogc"`
	GOMEMLIMIT   string  `json:"gomemlimit"`
	// Sampled every 200ms since the child started, so they can miss a
	// short peak; VmHWM cannot.
	MaxHeapAlloc uint64 `json:"maxHeapAlloc"`
	MaxHeapInuse uint64 `json:"maxHeapInuse"`
	// MaxLiveHeap is the largest heap the GC found live (marked): what
	// has to fit under a memory limit, whatever the GC's pacing.
	MaxLiveHeap uint64 `json:"maxLiveHeap"`
	// The bridge's kubebridge_pending_objects and
	// kubebridge_publish_buffer_bytes, sampled likewise.
	MaxPending     int64 `json:"maxPendingObjects"`
	MaxBufferBytes int64 `json:"maxPublishBufferBytes"`
	// Updates is how many update notifications the informer delivered.
	Updates int64 `json:"updates"`
	// CPUStartSecs and CPUEndSecs are the process's CPU time (user and
	// system) when the measurement began and when it ended: the CPU a
	// churn cost is churn.CPUStartSecs - ready.CPUEndSecs, without the
	// collections a measurement forces.
	CPUStartSecs float64 `json:"cpuStartSeconds"`
	CPUEndSecs   float64 `json:"cpuEndSeconds"`
}

// run is one mode's measurements and what the parent checked.
type run struct {
	m      mode
	ready  result
	churn  *result
	stream *streamCount // bridge modes
	load   *churnStats
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

// bench is what every child run needs from the parent.
type bench struct {
	env        *testenv.Env
	cs         kubernetes.Interface
	self       string
	kubeconfig string
	objects    int
	size       int
	settle     time.Duration
	profiles   string
	// cpuProfiles is -cpuprofile's directory.
	cpuProfiles string
	memLimit    string
	churn       churnOptions
}

type churnOptions struct {
	updates     int
	rate        float64
	workers     int
	outage      time.Duration
	outageAfter time.Duration
}

func parent() error {
	objects := flag.Int("objects", 20000, "number of ConfigMaps to create and cache")
	size := flag.Int("size", 2048, "bytes of data per ConfigMap (split over 4 keys)")
	only := flag.String("modes", "", "comma-separated modes to run (default all: "+modeNames()+"); bridge modes take a publish buffer suffix, e.g. bridge-typed@8Mi")
	workers := flag.Int("workers", 16, "goroutines creating ConfigMaps")
	settle := flag.Duration("settle", 2*time.Second, "how long each child sleeps after runtime.GC() before measuring")
	profiles := flag.String("heapprofile", "", "if set, a directory where each child writes <mode>.pprof (heap, after the last measurement) and <mode>-peak.pprof (at the peak of its live heap)")
	cpuProfiles := flag.String("cpuprofile", "", "a directory where each child writes <mode>-ready-cpu.pprof, a CPU profile from its start to ready (the cache sync; for the bridge, the start-up snapshot stored), and with -churn <mode>-churn-cpu.pprof, one of the churn, from the end of its ready measurement to the last update seen")
	memLimit := flag.String("child-gomemlimit", "", "GOMEMLIMIT of every child, e.g. 256MiB (the deployment sets the pod's memory limit); empty leaves it unset")
	churn := flag.Int("churn", 0, "after each child is ready, update this many ConfigMaps (round robin) and measure again")
	churnRate := flag.Float64("churn-rate", 10, "updates per second during -churn")
	churnWorkers := flag.Int("churn-workers", 4, "goroutines sending the -churn updates")
	outage := flag.Duration("nats-outage", 0, "during -churn, stop the NATS server for this long")
	outageAfter := flag.Duration("outage-after", 2*time.Second, "how far into -churn the NATS outage starts")
	maxPayload := flag.Int("nats-max-payload", 0, "NATS server max_payload in bytes; 0 keeps the server's default (1 MiB)")
	flag.Parse()
	if *objects < 1 || *size < 4 {
		return errors.New("-objects must be >= 1 and -size >= 4")
	}
	if *churn < 0 || *churnRate <= 0 || *churnWorkers < 1 {
		return errors.New("-churn must be >= 0, -churn-rate > 0 and -churn-workers >= 1")
	}
	if *outage > 0 && *churn == 0 {
		return errors.New("-nats-outage needs -churn")
	}
	selected, err := selectModes(*only)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := testenv.Options{
		StartTimeout: 3 * time.Minute,
		// Large objects and churn write gigabytes of revisions between the
		// apiserver's compactions; etcd's default 2 GiB quota would stop
		// the run.
		EtcdFlags: []string{"--quota-backend-bytes=" + strconv.Itoa(8<<30)},
	}
	if *maxPayload > 0 {
		opts.NATS = func(o *server.Options) { o.MaxPayload = int32(*maxPayload) }
	}
	start := time.Now()
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Fprintf(os.Stderr, "environment up in %v: kube-apiserver %s, nats %s (max_payload %d)\n",
		time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.NATSURL(), natsMaxPayload(env))

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

	b := &bench{env: env, cs: cs, self: self, kubeconfig: kubeconfig, objects: *objects, size: *size, settle: *settle, profiles: *profiles, cpuProfiles: *cpuProfiles,
		memLimit: *memLimit, churn: churnOptions{updates: *churn, rate: *churnRate, workers: *churnWorkers, outage: *outage, outageAfter: *outageAfter}}
	var runs []run
	for i, m := range selected {
		r, err := b.runChild(ctx, m, i)
		if err != nil {
			return fmt.Errorf("%s: %w", m.id(), err)
		}
		runs = append(runs, r)
	}

	printReport(os.Stdout, b, runs, serverVersion, natsMaxPayload(env))
	return nil
}

// natsMaxPayload is the max_payload the NATS server announces to clients.
func natsMaxPayload(env *testenv.Env) int {
	nc, err := nats.Connect(env.NATSURL())
	if err != nil {
		return -1
	}
	defer nc.Close()
	return int(nc.MaxPayload())
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
		name, noGzip := strings.CutSuffix(strings.TrimSpace(name), "+nogzip")
		name, budget, _ := strings.Cut(name, "@")
		found := false
		for _, m := range modes {
			if m.name == name {
				if budget != "" {
					if !m.isBridge() {
						return nil, fmt.Errorf("mode %q: only bridge modes take a @budget", name)
					}
					m.budget = budget
					m.label += ", publish buffer " + budget
				}
				if noGzip {
					m.noGzip = true
					m.label += ", no gzip"
				}
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
	err := benchkit.Parallel(ctx, n, workers, func(ctx context.Context, i int) error { return createOne(ctx, cs, i, size) }, func(d int) {
		if d%2000 == 0 || d == n {
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, "created %d/%d ConfigMaps in %v (%.0f/s)\n", d, n, el.Round(time.Millisecond), float64(d)/el.Seconds())
		}
	})
	if err != nil {
		return fmt.Errorf("create ConfigMaps: %w", err)
	}
	return nil
}

const dataAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"

// randomData is n random characters that need no escaping in JSON.
func randomData(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for j := range b {
		b[j] = dataAlphabet[rng.IntN(len(dataAlphabet))]
	}
	return string(b)
}

func createOne(ctx context.Context, cs kubernetes.Interface, i, size int) error {
	rng := rand.New(rand.NewPCG(uint64(i), 0x6b75626562726964))
	const keys = 4
	data := make(map[string]string, keys)
	for k := range keys {
		data["key-"+strconv.Itoa(k)] = randomData(rng, size/keys)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Namespace: benchNamespace, Labels: map[string]string{"app": "bench-memory"}},
		Data:       data,
	}
	return benchkit.Retry(ctx, func() error {
		_, err := cs.CoreV1().ConfigMaps(benchNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func objectName(i int) string { return fmt.Sprintf("cm-%06d", i) }

// runChild runs mode m in a fresh process: the first measurement once it is
// ready, then, with -churn, the churn and a second measurement. seq makes
// each run's updates differ from the previous run's, so none is a no-op.
func (b *bench) runChild(ctx context.Context, m mode, seq int) (run, error) {
	fmt.Fprintf(os.Stderr, "==== %s: %s\n", m.id(), m.label)
	out := run{m: m}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	natsURL := b.env.NATSURL()
	args := []string{"child", m.name, "-kubeconfig", b.kubeconfig, "-nats", natsURL, "-settle", b.settle.String(), "-stream", streamName(m)}
	if m.budget != "" {
		args = append(args, "-budget", m.budget)
	}
	if m.noGzip {
		args = append(args, "-no-gzip")
	}
	if b.churn.updates > 0 {
		args = append(args, "-wait")
	}
	if b.profiles != "" {
		if err := os.MkdirAll(b.profiles, 0o755); err != nil {
			return out, err
		}
		args = append(args, "-heapprofile", filepath.Join(b.profiles, m.id()+".pprof"))
	}
	if b.cpuProfiles != "" {
		if err := os.MkdirAll(b.cpuProfiles, 0o755); err != nil {
			return out, err
		}
		args = append(args, "-ready-cpuprofile", filepath.Join(b.cpuProfiles, m.id()+"-ready-cpu.pprof"))
		if b.churn.updates > 0 {
			args = append(args, "-churn-cpuprofile", filepath.Join(b.cpuProfiles, m.id()+"-churn-cpu.pprof"))
		}
	}
	cmd := exec.CommandContext(ctx, b.self, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = os.Environ()
	if b.memLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+b.memLimit)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return out, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return out, err
	}
	if err := cmd.Start(); err != nil {
		return out, err
	}
	// Whatever happens, the child is not left running.
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)

	if out.ready, err = readResult(lines); err != nil {
		return out, err
	}
	if out.ready.Objects >= 0 && out.ready.Objects != b.objects {
		return out, fmt.Errorf("child cached %d objects, want %d", out.ready.Objects, b.objects)
	}
	if m.isBridge() {
		sc, err := countStream(ctx, natsURL, streamName(m))
		if err != nil {
			return out, err
		}
		// term marker + begin marker + one item per object + end marker
		if sc.Msgs != uint64(b.objects)+3 || sc.Items != b.objects {
			return out, fmt.Errorf("stream %s holds %d messages (%d snapshot items), want %d (%d)", streamName(m), sc.Msgs, sc.Items, b.objects+3, b.objects)
		}
		out.stream = &sc
	}
	logResult(m, out.ready)
	if b.churn.updates == 0 {
		if err := stdin.Close(); err != nil {
			return out, err
		}
		return out, cmd.Wait()
	}

	load, err := b.runChurn(ctx, seq)
	out.load = &load
	if err != nil {
		return out, err
	}
	if m.isBridge() {
		sc, err := waitForUpdates(ctx, natsURL, streamName(m), b.churn.updates)
		if err != nil {
			return out, err
		}
		if sc.Items != b.objects || sc.Changes != b.churn.updates || sc.Other != 0 {
			return out, fmt.Errorf("stream %s: %d snapshot items, %d updated events standing for %d updates, %d other events; want %d items, %d updates, no other events",
				streamName(m), sc.Items, sc.Updated, sc.Changes, sc.Other, b.objects, b.churn.updates)
		}
		out.stream = &sc
	}
	if _, err := fmt.Fprintf(stdin, "measure %d\n", b.churn.updates); err != nil {
		return out, err
	}
	r, err := readResult(lines)
	if err != nil {
		return out, err
	}
	if r.Objects >= 0 && r.Updates < int64(b.churn.updates) {
		return out, fmt.Errorf("informer delivered %d updates, want %d", r.Updates, b.churn.updates)
	}
	out.churn = &r
	logResult(m, r)
	if err := stdin.Close(); err != nil {
		return out, err
	}
	return out, cmd.Wait()
}

func readResult(lines *bufio.Scanner) (result, error) {
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return result{}, fmt.Errorf("child output %q: %w", line, err)
		}
		return r, nil
	}
	if err := lines.Err(); err != nil {
		return result{}, err
	}
	return result{}, errors.New("child exited without a result")
}

func logResult(m mode, r result) {
	fmt.Fprintf(os.Stderr, "==== %s (%s): RSS %.1f MiB, peak %.1f MiB, heap in-use %.1f MiB, max live heap %.1f MiB, max sampled heap alloc %.1f MiB, max pending %d, max publish buffer %.1f MiB\n",
		m.id(), r.Phase, kib(r.VmRSSKiB), kib(r.VmHWMKiB), mib(r.HeapInuse), mib(r.MaxLiveHeap), mib(r.MaxHeapAlloc), r.MaxPending, mib(uint64(r.MaxBufferBytes)))
}

// churnStats is what the churn did.
type churnStats struct {
	Updates  int
	Duration time.Duration
	// Outage is how long NATS was actually down.
	Outage time.Duration
}

// runChurn updates b.churn.updates ConfigMaps round robin at b.churn.rate,
// each time rewriting one of the four keys with new random data, so the
// object keeps its size. With an outage configured, NATS is stopped during
// the churn. It returns once every update is done and NATS is up again.
func (b *bench) runChurn(ctx context.Context, seq int) (churnStats, error) {
	c := b.churn
	st := churnStats{Updates: c.updates}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var outageErr error
	outageDone := make(chan struct{})
	go func() {
		defer close(outageDone)
		if c.outage <= 0 {
			return
		}
		select {
		case <-time.After(c.outageAfter):
		case <-ctx.Done():
			return
		}
		down := time.Now()
		fmt.Fprintf(os.Stderr, "churn: stopping NATS for %v\n", c.outage)
		b.env.StopNATS()
		select {
		case <-time.After(c.outage):
		case <-ctx.Done():
		}
		outageErr = b.env.StartNATS()
		st.Outage = time.Since(down)
		fmt.Fprintf(os.Stderr, "churn: NATS started again after %v\n", st.Outage.Round(time.Millisecond))
	}()

	jobs := make(chan int)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for k := range jobs {
				if err := b.updateOne(ctx, k, seq); err != nil {
					failed.CompareAndSwap(nil, &err)
					cancel()
				}
			}
		})
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
	for k := 0; k < c.updates && ctx.Err() == nil; k++ {
		select {
		case jobs <- k:
		case <-ctx.Done():
		}
		if (k+1)%100 == 0 {
			fmt.Fprintf(os.Stderr, "churn: %d/%d updates sent in %v\n", k+1, c.updates, time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	st.Duration = time.Since(start)
	<-outageDone
	if p := failed.Load(); p != nil {
		return st, fmt.Errorf("churn: %w", *p)
	}
	if outageErr != nil {
		return st, outageErr
	}
	return st, ctx.Err()
}

// updateOne rewrites one data key of ConfigMap k mod objects with a merge
// patch: the object keeps its size, and the patch is a quarter of it.
func (b *bench) updateOne(ctx context.Context, k, seq int) error {
	i := k % b.objects
	rng := rand.New(rand.NewPCG(uint64(k), uint64(seq)<<32|0x6368))
	body, err := json.Marshal(map[string]any{"data": map[string]string{"key-" + strconv.Itoa(k/b.objects%4): randomData(rng, b.size/4)}})
	if err != nil {
		return err
	}
	return benchkit.Retry(ctx, func() error {
		_, err := b.cs.CoreV1().ConfigMaps(benchNamespace).Patch(ctx, objectName(i), types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
}

// streamCount is what the stream holds, read from the messages' headers.
type streamCount struct {
	Msgs    uint64
	Begins  int
	Items   int
	Ends    int
	Updated int
	// Changes is the number of updates the updated events stand for:
	// each counts its ce-coalesced, or 1.
	Changes int
	// Coalesced is the number of updated events that merged several.
	Coalesced int
	Truncated int
	Other     int
	// UpdatedBytes is the total payload size of the updated events.
	UpdatedBytes int64
}

// countStream reads every message's headers (not the payloads) from the
// stream.
func countStream(ctx context.Context, url, name string) (streamCount, error) {
	var sc streamCount
	nc, err := nats.Connect(url)
	if err != nil {
		return sc, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return sc, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return sc, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return sc, err
	}
	sc.Msgs = info.State.Msgs
	if sc.Msgs == 0 {
		return sc, nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return sc, err
	}
	it, err := cons.Messages()
	if err != nil {
		return sc, err
	}
	defer it.Stop()
	for range sc.Msgs {
		msg, err := it.Next(jetstream.NextMaxWait(30 * time.Second))
		if err != nil {
			return sc, fmt.Errorf("stream %s: reading headers: %w", name, err)
		}
		h := msg.Headers()
		if h.Get(contract.Header(contract.ExtTruncated)) == "true" {
			sc.Truncated++
		}
		switch h.Get(contract.HeaderType) {
		case contract.TypeSnapshotBegin:
			sc.Begins++
		case contract.TypeSnapshotItem:
			sc.Items++
		case contract.TypeSnapshotEnd:
			sc.Ends++
		case contract.TypeTerm:
			// One per bridge start, before anything it publishes.
		case contract.TypeUpdated:
			sc.Updated++
			n := 1
			if v, err := strconv.Atoi(h.Get(contract.Header(contract.ExtCoalesced))); err == nil && v > 0 {
				n = v
				sc.Coalesced++
			}
			sc.Changes += n
			if v, err := strconv.ParseInt(h.Get(nats.MsgSize), 10, 64); err == nil {
				sc.UpdatedBytes += v
			}
		default:
			sc.Other++
		}
	}
	return sc, nil
}

// waitForUpdates waits until the updated events in the stream stand for
// want updates, or for five minutes.
func waitForUpdates(ctx context.Context, url, name string, want int) (streamCount, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		sc, err := countStream(ctx, url, name)
		if err == nil && sc.Changes >= want {
			return sc, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the updated events stand for %d updates, want %d", sc.Changes, want)
			}
			return sc, fmt.Errorf("stream %s after 5m: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return sc, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func kib(k int64) float64  { return float64(k) / 1024 }
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func printReport(w io.Writer, b *bench, runs []run, serverVersion string, maxPayload int) {
	var base *result
	for i := range runs {
		if runs[i].m.name == "baseline" {
			base = &runs[i].ready
		}
	}
	objects := b.objects
	fmt.Fprintf(w, "\n%d ConfigMaps, %d bytes of data each (4 keys), one namespace; every mode in a fresh child process.\n\n", objects, b.size)
	fmt.Fprintln(w, "| mode | RSS MiB | peak RSS MiB | RSS after FreeOSMemory MiB | Go heap in-use MiB | Go heap alloc MiB | heap in-use B/object | (heap − baseline) B/object | ready s | start-up snapshot s |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		r := rn.ready
		delta := "–"
		if base != nil && rn.m.name != "baseline" {
			delta = strconv.FormatInt((int64(r.HeapInuse)-int64(base.HeapInuse))/int64(objects), 10)
		}
		snapshot := "–"
		if r.SnapshotSecs > 0 {
			snapshot = strconv.FormatFloat(r.SnapshotSecs, 'f', 2, 64)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %s | %.1f | %s |\n",
			rn.m.label, kib(r.VmRSSKiB), kib(r.VmHWMKiB), kib(r.FreedRSS), mib(r.HeapInuse), mib(r.HeapAlloc),
			r.HeapInuse/uint64(objects), delta, r.ReadySecs, snapshot)
	}
	if b.churn.updates > 0 {
		printChurnReport(w, b, runs)
	}
	fmt.Fprintln(w)
	var goVersion, gogc, memLimit string
	gmp := 0
	if len(runs) > 0 {
		r := runs[0].ready
		goVersion, gmp, gogc, memLimit = r.GoVersion, r.GOMAXPROCS, r.GOGC, r.GOMEMLIMIT
	}
	if gogc == "" {
		gogc = "unset (100)"
	}
	if memLimit == "" {
		memLimit = "unset"
	}
	fmt.Fprintf(w, "Machine: %s %s/%s, GOMAXPROCS=%d (NumCPU %d), GOGC=%s, GOMEMLIMIT=%s, %s, %s RAM, kernel %s\n",
		goVersion, runtime.GOOS, runtime.GOARCH, gmp, runtime.NumCPU(), gogc, memLimit, cpuModel(), memTotal(), kernel())
	fmt.Fprintf(w, "kube-apiserver %s, client-go %s, NATS max_payload %d\n", serverVersion, moduleVersion("k8s.io/client-go"), maxPayload)
}

// printChurnReport prints the peaks over the whole life of each child,
// against the first informer mode's ("typed" when it ran), and what the
// stream received.
func printChurnReport(w io.Writer, b *bench, runs []run) {
	var ref *run
	for i := range runs {
		if runs[i].m.name == "typed" {
			ref = &runs[i]
			break
		}
	}
	for i := range runs {
		if ref == nil && !runs[i].m.isBridge() && runs[i].m.name != "baseline" {
			ref = &runs[i]
		}
	}
	c := b.churn
	fmt.Fprintf(w, "\nChurn: %d updates requested at %.0f/s", c.updates, c.rate)
	if c.outage > 0 {
		fmt.Fprintf(w, ", NATS stopped for %v starting %v into the churn", c.outage, c.outageAfter)
	}
	fmt.Fprintf(w, ". Peaks are over each child's whole life: cache sync or start-up snapshot, then the churn.\n\n")
	refLabel := "–"
	if ref != nil {
		refLabel = ref.m.label
	}
	fmt.Fprintf(w, "| mode | peak RSS after start-up MiB | peak RSS at end MiB | peak ÷ %s | RSS at end MiB | heap in-use at end MiB | max live heap MiB | max sampled heap alloc MiB | max pending objects | max publish buffer MiB | churn s | NATS down s |\n", refLabel)
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		if rn.churn == nil {
			continue
		}
		r := rn.churn
		ratio := "–"
		if ref != nil && ref.churn != nil {
			ratio = fmt.Sprintf("%.2f", float64(r.VmHWMKiB)/float64(ref.churn.VmHWMKiB))
		}
		pending, buffer := "–", "–"
		if rn.m.isBridge() {
			pending, buffer = strconv.FormatInt(r.MaxPending, 10), fmt.Sprintf("%.1f", mib(uint64(r.MaxBufferBytes)))
		}
		var churnSecs, outage float64
		if rn.load != nil {
			churnSecs, outage = rn.load.Duration.Seconds(), rn.load.Outage.Seconds()
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %.1f | %.1f |\n",
			rn.m.label, kib(rn.ready.VmHWMKiB), kib(r.VmHWMKiB), ratio, kib(r.VmRSSKiB), mib(r.HeapInuse), mib(r.MaxLiveHeap), mib(r.MaxHeapAlloc), pending, buffer, churnSecs, outage)
	}
	// CPU is compared with the typed informer run the same way (gzip on
	// or off), when there is one.
	fmt.Fprintf(w, "\n| mode | CPU s during the churn | CPU ms per 1,000 updates | ÷ %s (same gzip setting) |\n", refLabel)
	fmt.Fprintln(w, "|---|--:|--:|--:|")
	perK := func(rn run) float64 {
		return (rn.churn.CPUStartSecs - rn.ready.CPUEndSecs) * 1000 / float64(c.updates) * 1000
	}
	cpuRef := func(rn run) *run {
		for i := range runs {
			if runs[i].m.name == "typed" && runs[i].m.noGzip == rn.m.noGzip && runs[i].churn != nil {
				return &runs[i]
			}
		}
		return ref
	}
	for _, rn := range runs {
		if rn.churn == nil {
			continue
		}
		ratio := "–"
		if r := cpuRef(rn); r != nil && r.churn != nil {
			ratio = fmt.Sprintf("%.2f", perK(rn)/perK(*r))
		}
		fmt.Fprintf(w, "| %s | %.2f | %.1f | %s |\n", rn.m.label, rn.churn.CPUStartSecs-rn.ready.CPUEndSecs, perK(rn), ratio)
	}
	fmt.Fprintln(w, "\n| mode | stream messages | snapshot begin/items/end | updated events | updates they stand for | coalesced events | truncated | mean updated event KiB |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, rn := range runs {
		sc := rn.stream
		if sc == nil {
			continue
		}
		mean := 0.0
		if sc.Updated > 0 {
			mean = float64(sc.UpdatedBytes) / float64(sc.Updated) / 1024
		}
		fmt.Fprintf(w, "| %s | %d | %d/%d/%d | %d | %d | %d | %d | %.0f |\n",
			rn.m.label, sc.Msgs, sc.Begins, sc.Items, sc.Ends, sc.Updated, sc.Changes, sc.Coalesced, sc.Truncated, mean)
	}
}

// startCPUProfile starts a CPU profile written to path (none when empty)
// and returns what stops it.
func startCPUProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// cpuSeconds is the CPU time, user and system, this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
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

// streamName is unique per mode run; stream names allow letters, digits,
// "_" and "-".
func streamName(m mode) string { return "MEMBENCH_" + strings.ToUpper(token(m.id())) }

// token maps a mode run's id to letters, digits and "_", valid in stream
// names and subject tokens alike.
func token(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// ---- child ----

// peaks samples the child's memory, and the bridge's intake and publish
// buffer gauges, every 200ms.
type peaks struct {
	mu                     sync.Mutex
	heapAlloc, heapInuse   uint64
	liveHeap               uint64
	pending, bufferedBytes int64
	metricsURL             atomic.Pointer[string]
	// peakProfile, if set, is rewritten with a heap profile whenever the
	// live heap grows by 5 % over the last one written: the profile of the
	// peak, which the profile at the end cannot show.
	peakProfile string
	profiled    uint64
}

func (p *peaks) run(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	client := &http.Client{Timeout: time.Second}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		metrics.Read(live)
		var pending, buffered int64 = -1, -1
		if u := p.metricsURL.Load(); u != nil {
			pending, buffered = scrapeGauges(client, *u)
		}
		p.mu.Lock()
		p.heapAlloc = max(p.heapAlloc, ms.HeapAlloc)
		p.heapInuse = max(p.heapInuse, ms.HeapInuse)
		var grown bool
		if live[0].Value.Kind() == metrics.KindUint64 {
			v := live[0].Value.Uint64()
			p.liveHeap = max(p.liveHeap, v)
			if grown = p.peakProfile != "" && v > p.profiled+p.profiled/20; grown {
				p.profiled = v
			}
		}
		p.pending = max(p.pending, pending)
		p.bufferedBytes = max(p.bufferedBytes, buffered)
		p.mu.Unlock()
		if grown {
			// A heap profile shows the heap as of the last GC, as the
			// live heap metric does.
			if err := writeHeapProfile(p.peakProfile); err != nil {
				fmt.Fprintf(os.Stderr, "child: peak heap profile: %v\n", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *peaks) fill(r *result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.MaxHeapAlloc, r.MaxHeapInuse, r.MaxLiveHeap, r.MaxPending, r.MaxBufferBytes = p.heapAlloc, p.heapInuse, p.liveHeap, p.pending, p.bufferedBytes
}

// scrapeSnapshotSeconds reads the total of the bridge's snapshot
// durations from its /metrics: at the ready measurement, the start-up
// snapshot's. 0 if it cannot.
func scrapeSnapshotSeconds(url string) float64 {
	var total float64
	scrapeMetrics(&http.Client{Timeout: 5 * time.Second}, url, func(name string, v float64) {
		if strings.HasPrefix(name, "kubebridge_snapshot_duration_seconds_sum") {
			total += v
		}
	})
	return total
}

// scrapeGauges reads kubebridge_pending_objects and
// kubebridge_publish_buffer_bytes from the bridge's /metrics.
func scrapeGauges(client *http.Client, url string) (pending, buffered int64) {
	pending, buffered = -1, -1
	scrapeMetrics(client, url, func(name string, v float64) {
		switch name {
		case "kubebridge_pending_objects":
			pending = int64(v)
		case "kubebridge_publish_buffer_bytes":
			buffered = int64(v)
		}
	})
	return
}

// scrapeMetrics calls fn with every sample's name (labels included) and
// value in the text exposition at url; nothing if it cannot be read.
func scrapeMetrics(client *http.Client, url string, fn func(name string, v float64)) {
	resp, err := client.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			fn(name, f)
		}
	}
}

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
	wait := fs.Bool("wait", false, `after the first measurement, wait for "measure N" on stdin, then for N informer updates, and measure again`)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.DisableCompression = *noGzip
	rc.UserAgent = "kubebridge-bench-memory/" + name
	kube, err := bridge.KubeFromREST(rc)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().WithName(name))
	var pk peaks
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
	// updates counts update notifications, with -wait only: a handler
	// would change what the plain informer rows measure.
	var updates atomic.Int64
	counter := cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) { updates.Add(1) }}

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
		var err error
		if objects, err = startInformer(ctx, f.Start, inf, counter, *wait); err != nil {
			return err
		}
		defer runtime.KeepAlive(inf)
	case "dynamic", "dynamic-transform":
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(kube.Clients.Dynamic, 0, benchNamespace, nil)
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
	case "bridge-typed", "bridge-dynamic":
		if name == "bridge-dynamic" {
			// Without a typed client NewSource falls back to the dynamic informer.
			kube = bridge.Kube{Clients: informers.Clients{Typed: nil, Dynamic: kube.Clients.Dynamic}, Discovery: kube.Discovery}
		}
		env := map[string]string{
			"BRIDGE_RESOURCES":      "configmaps",
			"BRIDGE_NAMESPACES":     benchNamespace,
			"BRIDGE_CLUSTER_NAME":   "bench",
			"NATS_URL":              *natsURL,
			"BRIDGE_RESYNC_PERIOD":  "0",
			"BRIDGE_STREAM_NAME":    *stream,
			"BRIDGE_SUBJECT_PREFIX": "membench." + strings.ToLower(token(strings.TrimPrefix(*stream, "MEMBENCH_"))),
			// A port of its own, so runs never collide; /metrics is sampled.
			"BRIDGE_HTTP_ADDR": "127.0.0.1:0",
		}
		if *budget != "" {
			env["BRIDGE_PUBLISH_BUFFER_BYTES"] = *budget
		}
		// Any other BRIDGE_* setting comes from the environment, to try
		// one (BRIDGE_PUBLISH_WINDOW=2048 go run ./hack/bench/memory ...);
		// the benchmark's own settings above win.
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BRIDGE_") {
				if _, set := env[k]; !set {
					env[k] = v
				}
			}
		}
		cfg, err := config.Load(ctx, envconfig.MapLookuper(env))
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
		listening := func(a net.Addr) {
			u := "http://" + a.String() + "/metrics"
			pk.metricsURL.Store(&u)
		}
		go func() {
			done <- bridge.Serve(serveCtx, cfg, kube, nc, bridge.WithReady(func() { close(ready) }), bridge.WithListening(listening))
		}()
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
	if err := stopReadyProfile(); err != nil {
		return err
	}

	measure := func(phase string) error {
		cpuStart := cpuSeconds()
		runtime.GC()
		runtime.GC()
		time.Sleep(*settle)
		r := result{Mode: name, Phase: phase, Objects: objects, ReadySecs: ready.Seconds(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
			GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT"), Updates: updates.Load()}
		r.VmRSSKiB, r.VmHWMKiB = procStatus()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapInuse, r.HeapAlloc, r.HeapSys, r.Sys, r.NumGC = ms.HeapInuse, ms.HeapAlloc, ms.HeapSys, ms.Sys, ms.NumGC
		pk.fill(&r)
		if u := pk.metricsURL.Load(); u != nil {
			r.SnapshotSecs = scrapeSnapshotSeconds(*u)
		}
		debug.FreeOSMemory()
		r.FreedRSS, _ = procStatus()
		r.CPUStartSecs, r.CPUEndSecs = cpuStart, cpuSeconds()
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
		if err := awaitChurn(ctx, objects >= 0, &updates); err != nil {
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

// awaitChurn reads "measure N" from the parent and, for an informer mode,
// waits until the informer delivered N updates.
func awaitChurn(ctx context.Context, informer bool, updates *atomic.Int64) error {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return errors.New("parent closed stdin before the churn was done")
	}
	var want int64
	if _, err := fmt.Sscanf(in.Text(), "measure %d", &want); err != nil {
		return fmt.Errorf("parent said %q: %w", in.Text(), err)
	}
	if !informer {
		return nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	for updates.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("informer delivered %d updates after 5m, want %d", updates.Load(), want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// startInformer starts an informer's factory, counting the informer's
// events when wait is set, and returns how many objects it holds once
// synced.
func startInformer(ctx context.Context, start func(<-chan struct{}), inf cache.SharedIndexInformer, counter cache.ResourceEventHandler, wait bool) (int, error) {
	if wait {
		if _, err := inf.AddEventHandler(counter); err != nil {
			return 0, err
		}
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return 0, errors.New("cache did not sync")
	}
	return len(inf.GetStore().ListKeys()), nil
}

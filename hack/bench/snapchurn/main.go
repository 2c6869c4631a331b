// Command snapchurn measures what a bridge started during churn publishes:
// whether live changes are lost while its start-up snapshot is published,
// whether it needs extra snapshots to recover, and how much larger the
// stream is than the snapshot plus the changes.
//
// It starts a real etcd + kube-apiserver and an in-process NATS server
// with JetStream (internal/testenv), preloads -objects ConfigMaps of -size
// bytes, then makes -creates, -updates and -deletes requests (interleaved
// at random, -rate requests per second), and starts the bridge binary
// -start-after into that churn with BRIDGE_RESYNC_PERIOD=0 and NATS_URL
// pointing at the benchmark's server. Once the churn is done and the
// stream has been quiet for -quiet, it reads the bridge's metrics and the
// whole stream and prints one markdown table row:
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) go run ./hack/bench/snapchurn -bridge bin/bridge
//
// Extra bridge variables: -env BRIDGE_PUBLISH_BUFFER_BYTES=8Mi (repeatable).
// Without -bridge, ./cmd/bridge is built first.
//
// Columns:
//   - changes observed: kubebridge_changes_observed_total.
//   - dropped: observed − (published added/updated/deleted + coalesced +
//     superseded), the metrics' identity; for a binary with the bounded
//     queue (it exports kubebridge_queue_capacity),
//     kubebridge_changes_dropped_total.
//   - extra snapshots: snapshot.begin markers beyond the first.
//   - items + changes: the start-up snapshot's items plus the changes
//     observed: what the stream needs to hold (besides two markers).
//   - replay = list: the reference consumer's mark-and-sweep replay of the
//     whole stream (internal/replay) equals the apiserver's list.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

const (
	namespace = "bench-snapchurn"
	cluster   = "bench"
	prefix    = "snapchurn"
	stream    = "SNAPCHURN"
	resource  = "configmaps.v1" // the metrics' resource label
)

// envFlags collects repeated -env KEY=VALUE.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }
func (e *envFlags) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

type options struct {
	objects, size               int
	rate                        float64
	creates, updates, deletes   int
	workers                     int
	bridge                      string
	env                         envFlags
	startAfter, quiet, deadline time.Duration
	label                       string
}

func main() {
	var o options
	flag.IntVar(&o.objects, "objects", 20000, "ConfigMaps created before the churn")
	flag.IntVar(&o.size, "size", 2048, "bytes of data per ConfigMap")
	flag.Float64Var(&o.rate, "rate", 800, "churn requests per second")
	flag.IntVar(&o.creates, "creates", 5000, "ConfigMaps created during the churn")
	flag.IntVar(&o.updates, "updates", 5000, "updates during the churn")
	flag.IntVar(&o.deletes, "deletes", 5000, "deletes during the churn")
	flag.IntVar(&o.workers, "workers", 32, "concurrent churn clients (each object's requests go through one of them, in order)")
	flag.StringVar(&o.bridge, "bridge", "", "bridge binary (default: build ./cmd/bridge)")
	flag.Var(&o.env, "env", "extra bridge environment KEY=VALUE (repeatable), e.g. BRIDGE_PUBLISH_BUFFER_BYTES=8Mi")
	flag.DurationVar(&o.startAfter, "start-after", 3*time.Second, "churn time before the bridge starts")
	flag.DurationVar(&o.quiet, "quiet", 10*time.Second, "after the churn, how long the stream must not grow to count as settled")
	flag.DurationVar(&o.deadline, "settle-timeout", 15*time.Minute, "longest wait for the stream to settle")
	flag.StringVar(&o.label, "label", "", "first column of the row (default: the bridge binary's path)")
	flag.Parse()
	if o.objects < 0 || o.creates < 0 || o.updates < 0 || o.deletes < 0 || o.rate <= 0 || o.workers < 1 || o.size < 1 {
		fmt.Fprintln(os.Stderr, "snapchurn: counts must be >= 0, -rate > 0, -workers >= 1, -size >= 1")
		os.Exit(2)
	}
	if o.deletes > o.objects+o.creates {
		fmt.Fprintln(os.Stderr, "snapchurn: more deletes than objects")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "snapchurn: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "snapchurn: "+format+"\n", args...)
}

func run(ctx context.Context, o options) error {
	workDir, err := os.MkdirTemp("", "snapchurn-")
	if err != nil {
		return err
	}
	if o.bridge == "" {
		if o.bridge, err = buildBridge(ctx, workDir); err != nil {
			return err
		}
	}
	if o.label == "" {
		o.label = o.bridge
	}

	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{StartTimeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer env.Close()
	logf("environment up in %v: kube-apiserver %s, nats %s", time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.NATSURL())
	rc := env.RESTConfig()
	rc.QPS, rc.Burst = 5000, 5000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := preload(ctx, cs, o.objects, o.size); err != nil {
		return err
	}
	kubeconfig := filepath.Join(workDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	ch := newChurn(cs, o)
	churnDone := make(chan error, 1)
	churnStart := time.Now()
	go func() { churnDone <- ch.run(ctx) }()
	select {
	case <-time.After(o.startAfter):
	case err := <-churnDone:
		return fmt.Errorf("the churn ended before the bridge started (%v); make it longer or -start-after shorter", err)
	}

	logPath := filepath.Join(workDir, "bridge.log")
	b, err := startBridge(o, kubeconfig, env.NATSURL(), logPath)
	if err != nil {
		return err
	}
	defer b.stop()
	logf("bridge %s started after %d churn requests; log %s", o.bridge, ch.done.Load(), logPath)

	var churnErr error
	select {
	case churnErr = <-churnDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	churnTime := time.Since(churnStart)
	logf("churn done: %v in %v (%.0f requests/s), %d failed", ch, churnTime.Round(time.Millisecond), float64(ch.done.Load())/churnTime.Seconds(), ch.failed.Load())
	if churnErr != nil {
		return churnErr
	}
	if err := b.waitLog(ctx, "Start-up snapshots published", o.deadline); err != nil {
		return err
	}
	nc, err := nats.Connect(env.NATSURL(), nats.Name("snapchurn"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := settle(ctx, js, o.quiet, o.deadline); err != nil {
		return err
	}
	addr, err := b.endpoint(ctx)
	if err != nil {
		return err
	}
	m, err := scrape(ctx, addr)
	if err != nil {
		return err
	}
	res, err := readStream(ctx, js)
	if err != nil {
		return err
	}
	want, err := list(ctx, cs)
	if err != nil {
		return err
	}
	res.diff = diff(res.state, want)
	printRow(o, ch, churnTime, m, res)
	return nil
}

// buildBridge builds ./cmd/bridge into dir.
func buildBridge(ctx context.Context, dir string) (string, error) {
	bin, err := testenv.GoBuild(ctx, dir, "bridge", "./cmd/bridge")
	if err != nil {
		return "", fmt.Errorf("%w (or pass -bridge)", err)
	}
	logf("built %s", bin)
	return bin, nil
}

// ---- objects ----

func data(i, size int) map[string]string {
	rng := rand.New(rand.NewPCG(uint64(i), 0x736e6170))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	b := make([]byte, size)
	for j := range b {
		b[j] = alphabet[rng.IntN(len(alphabet))]
	}
	return map[string]string{"blob": string(b)}
}

func preload(ctx context.Context, cs kubernetes.Interface, n, size int) error {
	start := time.Now()
	err := benchkit.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i)}, Data: data(i, size)}
		return benchkit.Retry(ctx, func() error {
			_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}, func(d int) {
		if d%5000 == 0 || d == n {
			logf("preloaded %d/%d ConfigMaps (%.0f/s)", d, n, float64(d)/time.Since(start).Seconds())
		}
	})
	if err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	return nil
}

// ---- churn ----

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

// ---- the bridge process ----

type bridgeProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startBridge(o options, kubeconfig, natsURL, logPath string) (*bridgeProc, error) {
	vars := map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
		"TMPDIR":                os.TempDir(),
		"KUBECONFIG":            kubeconfig,
		"NATS_URL":              natsURL,
		"BRIDGE_RESOURCES":      "configmaps",
		"BRIDGE_NAMESPACES":     namespace,
		"BRIDGE_RESYNC_PERIOD":  "0",
		"BRIDGE_CLUSTER_NAME":   cluster,
		"BRIDGE_SUBJECT_PREFIX": prefix,
		"BRIDGE_STREAM_NAME":    stream,
		"BRIDGE_HTTP_ADDR":      "127.0.0.1:0",
	}
	for _, kv := range o.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(o.bridge)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.bridge, err)
	}
	b := &bridgeProc{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.done) }()
	return b, nil
}

func (b *bridgeProc) stop() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *bridgeProc) waitLog(ctx context.Context, substr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		raw, _ := os.ReadFile(b.log)
		if strings.Contains(string(raw), substr) {
			return nil
		}
		select {
		case <-b.done:
			return fmt.Errorf("the bridge exited (%v) before logging %q; log %s", b.cmd.ProcessState, substr, b.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the bridge did not log %q within %v; log %s", substr, timeout, b.log)
		}
	}
}

var listenLine = regexp.MustCompile(`"Serving /healthz, /readyz and /metrics".* address="([^"]+)"`)

func (b *bridgeProc) endpoint(ctx context.Context) (string, error) {
	if err := b.waitLog(ctx, "Serving /healthz, /readyz and /metrics", time.Minute); err != nil {
		return "", err
	}
	raw, _ := os.ReadFile(b.log)
	m := listenLine.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("no listen address in %s", b.log)
	}
	return "http://" + string(m[1]), nil
}

// ---- measuring ----

// settle waits until the stream's last sequence has not moved for quiet.
func settle(ctx context.Context, js jetstream.JetStream, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last uint64
	since := time.Now()
	for {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			var info *jetstream.StreamInfo
			if info, err = s.Info(ctx); err == nil {
				if info.State.LastSeq != last {
					last, since = info.State.LastSeq, time.Now()
				} else if time.Since(since) >= quiet {
					logf("stream settled at %d messages", info.State.Msgs)
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream did not settle within %v (last error: %v)", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// metrics is a scrape: "name" → samples as label set → value.
type metrics map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func scrape(ctx context.Context, base string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/metrics: HTTP %d: %s", resp.StatusCode, body)
	}
	out := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			labels[p[1]] = p[2]
		}
		out[m[1]] = append(out[m[1]], sample{labels, v})
	}
	return out, sc.Err()
}

func (m metrics) sum(name string, match ...string) float64 {
	total := 0.0
	for _, s := range m[name] {
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			ok = ok && s.labels[match[i]] == match[i+1]
		}
		if ok {
			total += s.value
		}
	}
	return total
}

type streamResult struct {
	messages     int
	begins       int
	firstItems   int
	live         int // added, updated, deleted events
	coalesced    int // of them with coalesced ≥ 2
	duplicateIDs int
	state        *replay.State
	diff         string
}

func readStream(ctx context.Context, js jetstream.JetStream) (streamResult, error) {
	r := streamResult{state: replay.NewState(contract.Subjects{Prefix: prefix, Cluster: cluster}), firstItems: -1}
	ids := map[string]struct{}{}
	firstSnapshot := ""
	items := 0
	start := time.Now()
	err := replay.ForEach(ctx, js, stream, "", func(m replay.Message) error {
		r.messages++
		if _, dup := ids[m.Event.ID()]; dup {
			r.duplicateIDs++
		}
		ids[m.Event.ID()] = struct{}{}
		switch m.Event.Type() {
		case contract.TypeSnapshotBegin:
			r.begins++
			if firstSnapshot == "" {
				firstSnapshot = m.Ext(contract.ExtSnapshotID)
			}
		case contract.TypeSnapshotItem:
			if m.Ext(contract.ExtSnapshotID) == firstSnapshot {
				items++
			}
		case contract.TypeSnapshotEnd:
			if m.Ext(contract.ExtSnapshotID) == firstSnapshot {
				r.firstItems = items
			}
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
			r.live++
			if n, _ := m.Coalesced(); n > 1 {
				r.coalesced++
			}
		}
		if err := r.state.Apply(m); err != nil {
			return fmt.Errorf("replay: seq %d: %w", m.Seq, err)
		}
		if r.messages%50000 == 0 {
			logf("read %d messages", r.messages)
		}
		return nil
	})
	logf("read %d messages in %v", r.messages, time.Since(start).Round(time.Millisecond))
	return r, err
}

// list is the apiserver's ConfigMaps as subject → resourceVersion.
func list(ctx context.Context, cs kubernetes.Interface) (map[string]string, error) {
	out := map[string]string{}
	opts := metav1.ListOptions{Limit: 1000}
	for {
		l, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, cm := range l.Items {
			out[prefix+"."+cluster+".core.v1.configmaps."+namespace+"."+cm.Name] = cm.ResourceVersion
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// diff describes how the replayed state differs from the list ("" if
// equal).
func diff(st *replay.State, want map[string]string) string {
	missing, stale, extra := 0, 0, 0
	for subj, rv := range want {
		o, ok := st.Objects[subj]
		switch {
		case !ok:
			missing++
		case o.ResourceVersion != rv:
			stale++
		}
	}
	for subj := range st.Objects {
		if _, ok := want[subj]; !ok {
			extra++
		}
	}
	if missing+stale+extra == 0 {
		return ""
	}
	return fmt.Sprintf("%d missing, %d at another rv, %d extra", missing, stale, extra)
}

func printRow(o options, ch *churn, churnTime time.Duration, m metrics, r streamResult) {
	observed := m.sum("kubebridge_changes_observed_total", "resource", resource)
	var published float64
	for _, t := range []string{"added", "updated", "deleted"} {
		published += m.sum("kubebridge_events_published_total", "resource", resource, "type", t)
	}
	coalesced := m.sum("kubebridge_changes_coalesced_total", "resource", resource)
	superseded := m.sum("kubebridge_events_superseded_total", "resource", resource)
	var dropped string
	if len(m["kubebridge_queue_capacity"]) > 0 {
		// The bounded queue's binary counts what it drops.
		dropped = fmt.Sprintf("%.0f (%.0f %%, changes_dropped_total)", m.sum("kubebridge_changes_dropped_total", "resource", resource),
			100*m.sum("kubebridge_changes_dropped_total", "resource", resource)/max(observed, 1))
	} else {
		d := observed - published - coalesced - superseded
		dropped = fmt.Sprintf("%.0f (%.0f %%)", d, 100*d/max(observed, 1))
	}
	extra := max(r.begins-1, 0)
	base := r.firstItems + int(observed)
	ratio := "–"
	if base > 0 {
		ratio = fmt.Sprintf("%.3f", float64(r.messages)/float64(base))
	}
	equal := "yes"
	if r.diff != "" {
		equal = "no: " + r.diff
	}
	fmt.Println()
	fmt.Println("| bridge | objects | churn (c/u/d at req/s) | changes observed | dropped | extra snapshots | stream messages | items + changes | messages / (items + changes) | coalesced events | regressions | duplicate ids | replay = list |")
	fmt.Println("|---|--:|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|")
	fmt.Printf("| %s | %d | %d/%d/%d at %.0f (asked %.0f) | %.0f | %s | %d | %d | %d + %.0f | %s | %d | %d | %d | %s |\n",
		o.label, o.objects, ch.creates.Load(), ch.updates.Load(), ch.deletes.Load(), float64(ch.done.Load())/churnTime.Seconds(), o.rate,
		observed, dropped, extra, r.messages, r.firstItems, observed, ratio, r.coalesced, len(r.state.Regressions), r.duplicateIDs, equal)
	fmt.Println()
	fmt.Printf("published added+updated+deleted %.0f, coalesced %.0f, superseded %.0f; %d live events in the stream; snapshots_total %.0f; bridge env %q\n",
		published, coalesced, superseded, r.live, m.sum("kubebridge_snapshots_total", "resource", resource), []string(o.env))
}

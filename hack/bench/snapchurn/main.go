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
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/testenv"
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
	env, cs, err := startCluster(ctx, o)
	if err != nil {
		return err
	}
	defer env.Close()
	kubeconfig := filepath.Join(workDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	ch := newChurn(cs, o)
	b, churnTime, err := churnWithBridge(ctx, o, ch, kubeconfig, env.NATSURL(), filepath.Join(workDir, "bridge.log"))
	if b != nil {
		defer b.stop()
	}
	if err != nil {
		return err
	}
	return measure(ctx, o, env.NATSURL(), cs, b, ch, churnTime)
}

// startCluster starts etcd, kube-apiserver and NATS, and preloads the
// ConfigMaps.
func startCluster(ctx context.Context, o options) (*testenv.Env, kubernetes.Interface, error) {
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{StartTimeout: 3 * time.Minute})
	if err != nil {
		return nil, nil, err
	}
	logf("environment up in %v: kube-apiserver %s, nats %s", time.Since(start).Round(time.Millisecond), env.APIServerURL(), env.NATSURL())
	cs, err := preloaded(ctx, env, o)
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return env, cs, nil
}

// preloaded is a client of env's API server, once it made the namespace
// and the preloaded ConfigMaps.
func preloaded(ctx context.Context, env *testenv.Env, o options) (kubernetes.Interface, error) {
	rc := env.RESTConfig()
	rc.QPS, rc.Burst = 5000, 5000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return cs, preload(ctx, cs, o.objects, o.size)
}

// churnWithBridge runs the churn, starts the bridge -start-after into it,
// and returns once the churn is done, with the bridge (for the caller to
// stop) and how long the churn took.
func churnWithBridge(ctx context.Context, o options, ch *churn, kubeconfig, natsURL, logPath string) (*bridgeProc, time.Duration, error) {
	churnDone := make(chan error, 1)
	churnStart := time.Now()
	go func() { churnDone <- ch.run(ctx) }()
	select {
	case <-time.After(o.startAfter):
	case err := <-churnDone:
		return nil, 0, fmt.Errorf("the churn ended before the bridge started (%v); make it longer or -start-after shorter", err)
	}

	b, err := startBridge(o, kubeconfig, natsURL, logPath)
	if err != nil {
		return nil, 0, err
	}
	logf("bridge %s started after %d churn requests; log %s", o.bridge, ch.done.Load(), logPath)

	var churnErr error
	select {
	case churnErr = <-churnDone:
	case <-ctx.Done():
		return b, 0, ctx.Err()
	}
	churnTime := time.Since(churnStart)
	logf("churn done: %v in %v (%.0f requests/s), %d failed", ch, churnTime.Round(time.Millisecond), float64(ch.done.Load())/churnTime.Seconds(), ch.failed.Load())
	return b, churnTime, churnErr
}

// measure waits for the bridge's start-up snapshot and for the stream to
// settle, then reads the bridge's metrics and the whole stream, compares
// the stream's replay with the API server's list, and prints the row.
func measure(ctx context.Context, o options, natsURL string, cs kubernetes.Interface, b *bridgeProc, ch *churn, churnTime time.Duration) error {
	if err := b.waitLog(ctx, "Start-up snapshots published", o.deadline); err != nil {
		return err
	}
	nc, err := nats.Connect(natsURL, nats.Name("snapchurn"))
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

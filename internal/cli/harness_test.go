package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/bridgetest"
	"github.com/kubebridge/kubebridge/internal/cli"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The real thing: kube-apiserver and etcd from internal/testenv, the
// bridge's Serve in process, JetStream in the environment's nats-server,
// and the CLI run in process through cli.Run.

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{})
}

const cluster = "clitest"

var harnessSeq atomic.Int64

// harness is one test's namespaces, subject prefix and stream.
type harness struct {
	t      *testing.T
	env    *testenv.Env
	cs     kubernetes.Interface
	prefix string
	stream string
	js     jetstream.JetStream
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.Get(t)
	n := harnessSeq.Add(1)
	h := &harness{t: t, env: env, prefix: fmt.Sprintf("cli%d", n), stream: fmt.Sprintf("CLI_%d", n)}
	h.cs = env.Clients(t).Kube
	h.js = bridgetest.JetStream(t, env, h.stream)
	return h
}

// namespace creates a namespace with a default service account (no
// controller-manager makes one, and pods need it).
func (h *harness) namespace() string {
	h.t.Helper()
	ctx := context.Background()
	ns, err := h.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cli-"}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := h.cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return ns.Name
}

// createConfigMap creates cm in namespace ns.
func (h *harness) createConfigMap(ns string, cm *corev1.ConfigMap) {
	h.t.Helper()
	if _, err := h.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// runBridge runs Serve on the resources in the namespaces until the
// returned stop is called, and waits until its start-up snapshots are
// stored.
func (h *harness) runBridge(resources string, namespaces ...string) (stop func()) {
	h.t.Helper()
	run := bridgetest.Start(h.t, h.env, map[string]string{
		"BRIDGE_RESOURCES": resources, "BRIDGE_NAMESPACES": strings.Join(namespaces, ","), "BRIDGE_CLUSTER_NAME": cluster,
		"BRIDGE_SUBJECT_PREFIX": h.prefix, "BRIDGE_STREAM_NAME": h.stream,
	})
	h.t.Cleanup(run.Stop)
	return run.Stop
}

// vars are the environment the CLI sees: the NATS URL and the bridge's
// names, as an operator next to the bridge would have them, and an empty
// home (no nats contexts, no kubeconfig but the test's).
func (h *harness) vars() map[string]string {
	return map[string]string{
		"NATS_URL": h.env.NATSURL(), "BRIDGE_STREAM_NAME": h.stream, "BRIDGE_SUBJECT_PREFIX": h.prefix,
		"BRIDGE_CLUSTER_NAME": cluster, "HOME": h.t.TempDir(), "KUBECONFIG": h.env.KubeconfigPath(),
	}
}

// result is one run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// run runs the CLI with args to completion.
func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runWith(context.Background(), nil, args...)
}

func (h *harness) runWith(ctx context.Context, opts []cli.Option, args ...string) result {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	vars := h.vars()
	opts = append([]cli.Option{cli.WithEnv(func(k string) string { return vars[k] })}, opts...)
	code := cli.Run(ctx, args, &stdout, &stderr, opts...)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// cliRun runs the CLI with exactly the variables vars.
func cliRun(vars map[string]string, args []string, stdout, stderr io.Writer) int {
	return cli.Run(context.Background(), args, stdout, stderr, cli.WithEnv(func(k string) string { return vars[k] }))
}

// lockedBuffer is a buffer a running command writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs the CLI in the background until the test ends or the
// returned stop is called; stop returns its exit code.
func (h *harness) start(args ...string) (stdout, stderr *lockedBuffer, stop func() int) {
	h.t.Helper()
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	vars := h.vars()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, args, stdout, stderr, cli.WithEnv(func(k string) string { return vars[k] }))
	}()
	var once sync.Once
	code := 0
	stop = func() int {
		once.Do(func() {
			cancel()
			code = <-done
		})
		return code
	}
	h.t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// subjects names the test's subjects.
func (h *harness) subjects() contract.Subjects {
	return contract.Subjects{Prefix: h.prefix, Cluster: cluster}
}

// waitFor polls cond until it returns "" (done) or a minute passes; the
// minute only guards against a hang, nothing is timed.
func (h *harness) waitFor(what string, cond func() string) {
	h.t.Helper()
	var still string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		still = cond()
		return still == "", nil
	})
	if err != nil {
		h.t.Fatalf("%s: still %s after a minute", what, still)
	}
}

// lastOn returns the last message on subject, nil when there is none.
func (h *harness) lastOn(subject string) *jetstream.RawStreamMsg {
	h.t.Helper()
	st, err := h.js.Stream(context.Background(), h.stream)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// waitStored waits until the stream's last message on an object's subject
// is ceType at resourceVersion rv ("" any).
func (h *harness) waitStored(subject, ceType, rv string) {
	h.t.Helper()
	h.waitFor("stream "+subject, func() string {
		m := h.lastOn(subject)
		if m == nil {
			return "empty"
		}
		if got := m.Header.Get("ce-type"); got != ceType || rv != "" && m.Header.Get("ce-resourceversion") != rv {
			return fmt.Sprintf("%s at rv %s, want %s at %s", got, m.Header.Get("ce-resourceversion"), ceType, rv)
		}
		return ""
	})
}

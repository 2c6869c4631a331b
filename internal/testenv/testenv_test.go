package testenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

const natsMaxPayload = 512 * 1024

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		NATS: func(o *server.Options) { o.MaxPayload = natsMaxPayload },
	})
}

// TestBinDir needs no binaries: it checks how $KUBEBRIDGE_KUBE_BINS is
// interpreted.
func TestBinDir(t *testing.T) {
	t.Setenv(testenv.EnvKubeBins, "")
	if _, err := testenv.BinDir(); !errors.Is(err, testenv.ErrNoBinaries) {
		t.Fatalf("unset: got %v, want ErrNoBinaries", err)
	} else if !strings.Contains(err.Error(), "make kube-bins") {
		t.Errorf("error does not say how to build the binaries: %v", err)
	}

	dir := t.TempDir()
	t.Setenv(testenv.EnvKubeBins, dir)
	if _, err := testenv.BinDir(); !errors.Is(err, testenv.ErrNoBinaries) {
		t.Fatalf("empty dir: got %v, want ErrNoBinaries", err)
	}
	for _, name := range []string{"kube-apiserver", "etcd", "etcdctl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := testenv.BinDir()
	if err != nil || got != dir {
		t.Fatalf("complete dir: got %q, %v; want %q", got, err, dir)
	}
}

// startKubeTest is the start of a test against the apiserver: the shared
// environment, a context that ends with the test or after two minutes, a
// clientset and a namespace of the test's own.
func startKubeTest(t *testing.T) (*testenv.Env, context.Context, *kubernetes.Clientset, string) {
	t.Helper()
	env := testenv.Get(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(env.RESTConfig())
	return env, ctx, cs, newNamespace(ctx, t, cs)
}

func newNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func TestAPIServerRestart(t *testing.T) {
	env, ctx, cs, ns := startKubeTest(t)
	want := map[string]string{"hello": "world"}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Data:       want,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}

	// The kubeconfig written by Start works too.
	kcfg, err := clientcmd.BuildConfigFromFlags("", env.KubeconfigPath())
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	v, err := kubernetes.NewForConfigOrDie(kcfg).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version via kubeconfig: %v", err)
	}
	t.Logf("server version %s", v.GitVersion)
	if !strings.HasPrefix(v.GitVersion, "v1.37.") {
		t.Errorf("server version = %q, want v1.37.x", v.GitVersion)
	}

	start := time.Now()
	env.KillAPIServer()
	shortCtx, shortCancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cs.CoreV1().ConfigMaps(ns).Get(shortCtx, "cm", metav1.GetOptions{})
	shortCancel()
	if err == nil {
		t.Fatal("get configmap succeeded while kube-apiserver was killed")
	}
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver kill+restart took %v", time.Since(start).Round(time.Millisecond))

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap after restart: %v", err)
	}
	if cm.Data["hello"] != want["hello"] {
		t.Fatalf("configmap data after restart = %v, want %v", cm.Data, want)
	}
}

func TestEtcdRestartAndCompact(t *testing.T) {
	env, ctx, cs, ns := startKubeTest(t)

	start := time.Now()
	if err := env.RestartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd kill+restart took %v", time.Since(start).Round(time.Millisecond))

	// kube-apiserver reconnects on its own; the first writes may fail.
	var cm *corev1.ConfigMap
	retry(t, ctx, "create configmap after etcd restart", 100*time.Millisecond, func(ctx context.Context) (err error) {
		cm, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm"},
			Data:       map[string]string{"v": "1"},
		}, metav1.CreateOptions{})
		return err
	})
	t.Logf("kube-apiserver usable %v after etcd restart began", time.Since(start).Round(time.Millisecond))

	oldRV := cm.ResourceVersion
	cm.Data["v"] = "2"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev, err := env.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if old, _ := strconv.ParseInt(oldRV, 10, 64); rev <= old {
		t.Fatalf("compacted to %d, want > %d", rev, old)
	}
	if _, err := env.Compact(ctx); err != nil {
		t.Fatalf("second compaction: %v", err)
	}
	key := "/registry/configmaps/" + ns + "/cm"
	_, err = env.Etcdctl(ctx, "get", key, "--rev="+oldRV)
	if err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("reading %s at revision %s after compaction: got %v, want compacted error", key, oldRV, err)
	}
}

func TestNATSRestart(t *testing.T) {
	env := testenv.Get(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	nc, err := nats.Connect(env.NATSURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != natsMaxPayload {
		t.Errorf("MaxPayload = %d, want %d (Options.NATS)", got, natsMaxPayload)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "TESTENV",
		Subjects: []string{"testenv.>"},
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "testenv.hello", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}

	url := env.NATSURL()
	start := time.Now()
	env.StopNATS()
	if err := env.StartNATS(func(o *server.Options) { o.MaxPayload = 4096 }); err != nil {
		t.Fatal(err)
	}
	t.Logf("nats stop+start took %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := env.RestartNATS(func(o *server.Options) { o.MaxPayload = natsMaxPayload }); err != nil {
			t.Error(err)
		}
	})
	if got := env.NATSURL(); got != url {
		t.Fatalf("NATS URL changed across restart: %s -> %s", url, got)
	}

	// The client reconnects by itself and the stream's data survived.
	var msg *jetstream.RawStreamMsg
	retry(t, ctx, "get message after NATS restart", 50*time.Millisecond, func(ctx context.Context) (err error) {
		msg, err = stream.GetMsg(ctx, ack.Sequence)
		return err
	})
	t.Logf("message readable %v after NATS stop began", time.Since(start).Round(time.Millisecond))
	if string(msg.Data) != "hello" {
		t.Fatalf("message after restart = %q, want %q", msg.Data, "hello")
	}
	ack2, err := js.Publish(ctx, "testenv.hello", []byte("again"))
	if err != nil {
		t.Fatal(err)
	}
	if ack2.Sequence != ack.Sequence+1 {
		t.Errorf("sequence after restart = %d, want %d", ack2.Sequence, ack.Sequence+1)
	}

	// Options passed to StartNATS apply from that start on.
	if got := nc.MaxPayload(); got != 4096 {
		t.Errorf("MaxPayload after restart = %d, want 4096", got)
	}
	if err := nc.Publish("testenv.big", make([]byte, 8192)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("publishing 8 KiB with MaxPayload 4096: got %v, want ErrMaxPayload", err)
	}
}

// TestStartError starts a second, standalone Env whose kube-apiserver
// cannot start, and checks that the error carries the log tail and that
// the logs are kept.
func TestStartError(t *testing.T) {
	_, err := testenv.Start(t.Context(), testenv.Options{
		APIServerFlags: []string{"--no-such-flag"},
	})
	if errors.Is(err, testenv.ErrNoBinaries) {
		testenv.SkipIfNoBinaries(t, err)
	}
	if err == nil {
		t.Fatal("Start succeeded with a bogus kube-apiserver flag")
	}
	t.Logf("Start error (expected):\n%v", err)
	msg := err.Error()
	if !strings.Contains(msg, "kube-apiserver exited unexpectedly") || !strings.Contains(msg, "no-such-flag") {
		t.Errorf("error lacks the exit reason or log tail")
	}
	// "... (logs kept in <dir>)"
	i := strings.LastIndex(msg, "(logs kept in ")
	if i < 0 {
		t.Fatal("error does not name the log dir")
	}
	logDir := strings.TrimSuffix(msg[i+len("(logs kept in "):], ")")
	if _, err := os.Stat(filepath.Join(logDir, "kube-apiserver.log")); err != nil {
		t.Errorf("kube-apiserver.log not kept: %v", err)
	}
	os.RemoveAll(filepath.Dir(logDir))
}

// retry calls f every pause until it succeeds, and fails the test with
// what and f's last error if it does not within retryTimeout.
func retry(t *testing.T, ctx context.Context, what string, pause time.Duration, f func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, pause, retryTimeout, true, func(ctx context.Context) (bool, error) {
		// Each attempt on a deadline of its own: a request sent while
		// the connection went down gets no reply, and waiting for one
		// until the poll ends would leave no time for the next attempt.
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		last = f(attempt)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (%v)", what, last, err)
	}
}

// attemptTimeout bounds one attempt of retry, retryTimeout all of them.
const (
	attemptTimeout = 5 * time.Second
	retryTimeout   = time.Minute
)

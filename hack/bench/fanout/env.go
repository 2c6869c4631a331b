package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/freeport"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// bench is the parent's environment: the servers, the binaries, and the
// client that makes the objects and the churn.
type bench struct {
	o    options
	env  *testenv.Env
	cs   kubernetes.Interface
	nats *testenv.NATSProcess
	// dir holds the binaries built, nats-server's config, store and log,
	// and the bridges' logs.
	dir                        string
	self, bridgeBin            string
	serverVersion, natsVersion string
	// natsProfURL is nats-server's CPU profile endpoint, with
	// -nats-cpuprofile.
	natsProfURL string
	pids        serverPIDs
}

// serverPIDs are the processes every setup measures.
type serverPIDs struct {
	apiserver, etcd, nats int
}

// startBench starts etcd, kube-apiserver and a nats-server process, builds
// what it is not given, and creates the namespace, the ConfigMaps and the
// marker.
func startBench(ctx context.Context, o options) (b *bench, err error) {
	b = &bench{o: o}
	if b.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if b.dir, err = os.MkdirTemp("", "fanout-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	start := time.Now()
	b.env, err = testenv.Start(ctx, testenv.Options{
		StartTimeout: 3 * time.Minute,
		// The churns write revisions faster than the default quota of
		// 2 GiB allows between the apiserver's compactions.
		EtcdFlags: []string{"--quota-backend-bytes=" + strconv.Itoa(8<<30)},
	})
	if err != nil {
		return nil, err
	}
	if err := b.startNATS(ctx); err != nil {
		return nil, err
	}
	if err := b.buildBridge(ctx); err != nil {
		return nil, err
	}
	if err := b.findPIDs(); err != nil {
		return nil, err
	}
	logf("environment up in %v: kube-apiserver %s (pid %d), etcd pid %d, nats-server %s %s (pid %d)", time.Since(start).Round(time.Millisecond),
		b.env.APIServerURL(), b.pids.apiserver, b.pids.etcd, b.natsVersion, b.nats.ClientURL, b.pids.nats)
	if err := b.connect(); err != nil {
		return nil, err
	}
	return b, b.createObjects(ctx)
}

func (b *bench) close() {
	if b.nats != nil {
		b.nats.Kill()
	}
	if b.env != nil {
		_ = b.env.Close() // the run's result is already printed, or its error returned
	}
	_ = os.RemoveAll(b.dir)
}

// startNATS starts the nats-server process every stream setup uses.
func (b *bench) startNATS(ctx context.Context) error {
	bin := b.o.natsBin
	if bin == "" {
		var err error
		if bin, err = testenv.BuildNATSServer(ctx, b.dir); err != nil {
			return err
		}
	}
	ports, err := freeport.Pick(3)
	if err != nil {
		return err
	}
	config := fmt.Sprintf("server_name: fanout\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\n",
		ports[0], ports[1], filepath.Join(b.dir, "nats-store"))
	if b.o.natsProfiles != "" {
		// nats-server serves net/http/pprof on its profiling port only.
		config += fmt.Sprintf("prof_port: %d\n", ports[2])
		b.natsProfURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile", ports[2])
	}
	if b.nats, err = testenv.StartNATSProcess(ctx, bin, b.dir, natsName, config, ports[0], ports[1]); err != nil {
		return err
	}
	nc, err := nats.Connect(b.nats.ClientURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	b.natsVersion = nc.ConnectedServerVersion()
	return nil
}

// natsName is the nats-server's server_name and the name of its config
// file in the work directory.
const natsName = "fanout-nats"

func (b *bench) buildBridge(ctx context.Context) error {
	if b.bridgeBin = b.o.bridgeBin; b.bridgeBin != "" {
		return nil
	}
	var err error
	b.bridgeBin, err = testenv.GoBuild(ctx, b.dir, "bridge", "github.com/kubebridge/kubebridge/cmd/bridge")
	return err
}

// findPIDs finds the servers' processes: etcd and nats-server by their
// command lines, which name the environment's directory and the
// benchmark's config file.
func (b *bench) findPIDs() error {
	b.pids.apiserver = b.env.APIServerPID()
	etcdData := "--data-dir=" + b.env.Dir()
	natsConf := filepath.Join(b.dir, natsName+".conf")
	var err error
	if b.pids.etcd, err = pidOf(func(args []string) bool {
		return filepath.Base(args[0]) == "etcd" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, etcdData) })
	}); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if b.pids.nats, err = pidOf(func(args []string) bool { return slices.Contains(args, natsConf) }); err != nil {
		return fmt.Errorf("nats-server: %w", err)
	}
	return nil
}

// pidOf is the one process whose command line match accepts.
func pidOf(match func(args []string) bool) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		if match(strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%d processes match, want 1: %v", len(found), found)
	}
	return found[0], nil
}

// connect makes the client of the objects and the churn.
func (b *bench) connect() error {
	rc := b.env.RESTConfig()
	rc.QPS, rc.Burst = 500, 1000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	var err error
	if b.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	b.serverVersion = "unknown"
	if v, err := b.cs.Discovery().ServerVersion(); err == nil {
		b.serverVersion = v.GitVersion
	}
	return nil
}

// createObjects creates the namespace, the ConfigMaps and the marker.
func (b *bench) createObjects(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	start := time.Now()
	n := b.o.objects
	err := benchkit.Parallel(ctx, n, b.o.workers, func(ctx context.Context, i int) error {
		return benchkit.CreateConfigMap(ctx, b.cs, benchNamespace, objectName(i), benchLabels(), uint64(i), b.o.size)
	}, func(d int) {
		if d%5000 == 0 || d == n {
			logf("created %d/%d ConfigMaps in %v", d, n, time.Since(start).Round(time.Millisecond))
		}
	})
	if err != nil {
		return fmt.Errorf("create ConfigMaps: %w", err)
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: markerName, Namespace: benchNamespace, Labels: benchLabels()}}
	_, err = b.cs.CoreV1().ConfigMaps(benchNamespace).Create(ctx, marker, metav1.CreateOptions{})
	return err
}

func objectName(i int) string { return fmt.Sprintf("cm-%06d", i) }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fanout: "+format+"\n", args...)
}

// Command versus measures what the bridge costs against the floor it runs
// on, a bare client-go informer, on the same objects and the same churn:
// CPU per 1,000 events, RSS after start, peak RSS, and the bridge's start-up
// snapshot, each as a ratio to the typed informer measured in the same run.
// Other modes (the dynamic informer, the transform, the bridge on the
// dynamic path) show where memory goes. Results are recorded in
// docs/performance.md and docs/memory.md.
//
// The parent process starts a real etcd + kube-apiserver + NATS (see
// internal/testenv), creates the ConfigMaps, and then re-executes itself
// once per mode ("versus child <mode> ...") so that every resident set size
// and CPU time is measured in a fresh process. Each child reports one JSON
// line on stdout per measurement; the parent prints markdown tables, the
// last of them the comparison with the floor. Issue 17's run:
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) go run ./hack/bench/versus -objects 20000 \
//		-modes typed,bridge-typed -churn 9000 -churn-mix create,update,delete -churn-rate 1500
//
// Flags: -objects (20000), -size (2048 bytes of data per ConfigMap),
// -modes (a comma-separated subset; a bridge mode takes a publish buffer
// as a suffix, e.g. bridge-typed@8Mi for BRIDGE_PUBLISH_BUFFER_BYTES=8Mi),
// -settle (2s, the pause between runtime.GC() and the measurement),
// -heapprofile DIR (write each child's heap profile, after the last
// measurement and at the peak of its live heap, for `go tool pprof
// -sample_index=inuse_space`, and its objects per size class at each
// measurement), -cpuprofile DIR (each child's CPU profile
// of its start and of its churn), -child-gomemlimit (GOMEMLIMIT of every
// child, as the deployment sets it to the pod's memory limit). Any other
// BRIDGE_* variable in the environment reaches the bridge modes.
//
// A mode also takes suffixes: +nogzip (no gzip from the API server),
// +gzip (a bridge mode's BRIDGE_KUBE_COMPRESSION=true; the bridge turns
// gzip off by default, an informer asks for it), +gogc=N, +procs=N and a
// bridge mode's +linger=D, and +exe=PATH: the child runs from another
// build of versus, so that two builds (say, before and after a change,
// `go build -o /tmp/versus-old ./hack/bench/versus` at the earlier commit)
// alternate in one invocation: -modes
// bridge-typed+exe=/tmp/versus-old,bridge-typed,... . The other build must
// speak the same child protocol (childArgs, childEnv, the JSON lines of
// result). The modes are the rows of modeTable (modes.go), the suffixes
// those of the suffix table (suffixes.go). Each mode is compared with the
// typed informer run with the same gzip and GOMAXPROCS settings (÷ floor),
// and with the typed informer as client-go sets one up (÷ client-go's
// defaults). A mode listed twice runs twice; a floor run more than once is the mean of its
// runs, so listing it before and after the others (-modes
// typed+nogzip,bridge-typed,typed+nogzip) brackets them against a machine
// whose speed drifts during the run.
//
// Custom resources: the modes dynamic-crd and bridge-crd cache Widgets
// (internal/fixtures' CRD, installed when one of them runs) instead of
// ConfigMaps: as many, with the same -size bytes of data in four string
// keys under .data, and the churn's creates, updates and deletes change
// Widgets in those modes. The report pairs the k-th run of each with the
// k-th run of the same mode on ConfigMaps (bridge-typed, dynamic-transform)
// and gives the ratios per pair and their median (issue 36):
//
//	go run ./hack/bench/versus -objects 20000 -modes bridge-typed,bridge-crd,bridge-typed,bridge-crd,bridge-typed,bridge-crd \
//		-churn 3000 -churn-mix create,update,delete -churn-rate 100
//
// With -cbor-server the apiserver serves CBOR (its CBORServingAndStorage
// gate, KEP-4222), and a mode+cbor child sets client-go's
// ClientsAllowCBOR and ClientsPreferCBOR gates (KUBE_FEATURE_*): its
// dynamic client, so the bridge's custom resources, then use CBOR on the
// wire (-modes bridge-crd,bridge-crd+cbor).
//
// The start-up snapshot's floor: publish-raw caches the objects as the
// bridge does, then publishes each, marshalled by encoding/json, with
// nats.go alone, and times it; publish-raw-items does the same with the
// bridge's own snapshot items. Every bridge's snapshot is compared with
// the mean of the publish-raw runs (-modes
// publish-raw,bridge-typed,publish-raw brackets it).
//
// The churn's floor for anything that stores every change in JetStream:
// typed-publish is the typed informer (with the bridge's transform) whose
// handler publishes each change's object, marshalled by encoding/json,
// with nats.go's PublishMsgAsync, each acknowledgement awaited before the
// churn is measured: one document and one acknowledged publish per event,
// without the bridge's envelope, old object, intake and fence (-modes
// typed,typed-publish,bridge-typed,... with -churn).
//
// With -churn N, once a child is ready (cache synced; for the bridge, the
// start-up snapshot stored) the parent makes N changes at -churn-rate per
// second: -churn-mix lists their kinds, made in equal parts in the order
// create, update, delete. A create adds a ConfigMap of -size bytes, an
// update rewrites one of the four data keys of a preloaded ConfigMap (round
// robin), so every update event carries an old and a new object of -size
// bytes, and a delete removes an object the creates made, so every mode
// starts on the same objects. With -nats-outage D the NATS server is
// stopped for D, -outage-after into the churn. The child measures again
// once it has seen every event (for the bridge: once the stream holds them
// all). -nats-max-payload raises the NATS server's max_payload (default
// 1 MiB), so large update events are stored whole instead of truncated.
// -namespaces N spreads the objects over N namespaces; the informer modes
// then watch all namespaces with the benchmark's label, and the mode
// typed-shard@i/N watches shard i of N only (internal/shard's rule,
// through informers.WithOwns), for what a shard holds against the whole:
//
//	go run ./hack/bench/versus -objects 100000 -namespaces 200 \
//		-modes typed,typed-shard@0/3,typed-shard@1/3,typed-shard@2/3 -churn 9000 -churn-mix create,update,delete -churn-rate 1500
//
// -churn-mix cluster changes the objects as a cluster's kubelets, agents
// and users do (cluster.go): with -pods N, N Pods besides the ConfigMaps,
// each with a kubelet's running status (there is no kubelet: the status is
// written with UpdateStatus), get status patches (conditions with probe
// and transition times, container restarts) and renewals of an
// example.com/heartbeat annotation, the ConfigMaps heartbeat renewals, and
// -meaningful of the changes (0.05) change a Pod's image or label or a
// ConfigMap's data or label. A bridge mode's +config=PATH runs it with a
// rules file (BRIDGE_CONFIG, which then lists the resources; rules.yaml
// and patch.yaml here), and the report compares what each run published,
// events and bytes, and its CPU per 1,000 changes, with the runs of its
// mode without one. The parent waits for one last meaningful change per
// type on the stream and checks that every object's last meaningful
// change is there. Issue 34's run:
//
//	R=hack/bench/versus/rules.yaml P=hack/bench/versus/patch.yaml M=bridge-typed,bridge-typed+config=$R,bridge-typed+config=$P
//	go run ./hack/bench/versus -objects 1000 -size 1024 -pods 1000 -churn 6000 -churn-rate 200 -churn-workers 8 \
//		-churn-mix cluster -modes $M,$M,$M
//
// The large-object run in docs/memory.md:
//
//	go run ./hack/bench/versus -objects 300 -size 500000 -modes typed,bridge-typed,bridge-typed@8Mi \
//		-churn 600 -churn-rate 10 -nats-outage 10s -outage-after 10s -nats-max-payload 4194304 \
//		-child-gomemlimit 256MiB
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "child: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(); err != nil {
		fmt.Fprintf(os.Stderr, "versus: %v\n", err)
		os.Exit(1)
	}
}

// bench is what every child run needs from the parent.
type bench struct {
	env *testenv.Env
	cs  kubernetes.Interface
	// clients are cs and a dynamic client, for the objects of every kind.
	clients    clients
	self       string
	kubeconfig string
	objects    int
	size       int
	settle     time.Duration
	// scrapeEvery is how often a bridge child reads its own /metrics.
	scrapeEvery time.Duration
	profiles    string
	// cpuProfiles is -cpuprofile's directory.
	cpuProfiles string
	memLimit    string
	churn       churnOptions
	layout      layout
	// pods is -pods: Pods besides the ConfigMaps (pods.go).
	pods int
}

type churnOptions struct {
	mix         churnMix
	rate        float64
	workers     int
	outage      time.Duration
	outageAfter time.Duration
	// meaningful is the cluster mix's share of meaningful changes.
	meaningful float64
}

func parent() error {
	o, err := parseOptions()
	if err != nil {
		return err
	}
	mix, err := parseChurnMix(o.mixKinds, o.churn)
	if err != nil {
		return err
	}
	if o.outage > 0 && o.churn == 0 {
		return errors.New("-nats-outage needs -churn")
	}
	selected, err := selectModes(o.modes)
	if err != nil {
		return err
	}
	if err := checkWorkload(o, mix, selected); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer env.Close()
	cl, serverVersion, err := benchClients(env)
	if err != nil {
		return err
	}
	cs := cl.typed
	l := layout{namespaces: o.namespaces, named: o.named}
	for _, ok := range objectKindsOf(selected) {
		if err := createObjects(ctx, cl, ok, l, o.objects, o.size, o.workers); err != nil {
			return err
		}
	}
	if err := createPods(ctx, cs, l, o.pods, o.workers); err != nil {
		return err
	}
	kubeconfig := filepath.Join(env.Dir(), "bench-kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	b := &bench{env: env, cs: cs, clients: cl, self: self, kubeconfig: kubeconfig, objects: o.objects, size: o.size, settle: o.settle, scrapeEvery: o.scrapeEvery, profiles: o.profiles, cpuProfiles: o.cpuProfiles,
		memLimit: o.memLimit, churn: churnOptions{mix: mix, rate: o.churnRate, workers: o.churnWorkers, outage: o.outage, outageAfter: o.outageAfter, meaningful: o.meaningful},
		layout: l, pods: o.pods}
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

// objectKindsOf is the kinds of the objects the modes cache, each once,
// in the order of the modes.
func objectKindsOf(modes []mode) []*objectKind {
	var out []*objectKind
	for _, m := range modes {
		if ok := m.kind.objectKind(); !slices.Contains(out, ok) {
			out = append(out, ok)
		}
	}
	return out
}

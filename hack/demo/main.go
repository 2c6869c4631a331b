// Command demo shows kubebridge at work on a throw-away control plane, with
// nothing but Go installed: it starts a real etcd and kube-apiserver (see
// internal/testenv), runs bin/bridge against them with its embedded NATS
// server, reads the stream the way a consumer would, and makes a few
// changes so that every kind of event shows up.
//
//	make demo      # the story: start-up snapshot, added, updated, deleted; then stop
//	make demo-up   # start-up only, then keep running and print how to attach
//
// or, with the binaries built:
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) go run ./hack/demo [-up] [-bridge bin/bridge]
//
// Without $KUBEBRIDGE_KUBE_BINS the demo runs hack/build-kube-bins.sh
// itself. Everything it starts is stopped and its temp dirs are removed at
// the end and on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

const (
	namespace   = "demo"
	cluster     = "demo"
	resources   = "configmaps; widgets.example.com"
	streamName  = "KUBEBRIDGE" // the bridge's default BRIDGE_STREAM_NAME
	filter      = "kubebridge." + cluster + ".>"
	crdName     = fixtures.WidgetCRDName
	eventWait   = 15 * time.Second // for one expected event
	bridgeStart = 60 * time.Second // until the start-up snapshots are in
	stopTimeout = 30 * time.Second // for the bridge to exit after SIGTERM
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func main() {
	up := flag.Bool("up", false, "start the control plane and the bridge, then keep them running until Ctrl-C and print how to attach")
	bridgeBin := flag.String("bridge", "bin/bridge", "the bridge binary (make build)")
	pause := flag.Duration("pause", 700*time.Millisecond, "pause between the steps of the story")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	d := &demo{up: *up, bridgeBin: *bridgeBin, pause: *pause, events: make(chan seen, 4096)}
	err := d.run(ctx)
	interrupted := ctx.Err() != nil
	stop() // a second Ctrl-C during clean-up ends the demo at once
	if interrupted && (err == nil || errors.Is(err, context.Canceled)) {
		err = nil
		d.say("--- interrupted")
	}
	if cerr := d.cleanup(err != nil); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
	if interrupted && !d.up { // for -up, Ctrl-C is the way to stop
		os.Exit(130)
	}
}

// seen is what the consumer tells the story about each event it received.
type seen struct {
	typ, kind, subject string
}

type demo struct {
	up        bool
	bridgeBin string
	pause     time.Duration
	start     time.Time

	mu sync.Mutex // serialises output

	tmp        string // the demo's own temp dir (NATS store, bridge log)
	env        *testenv.Env
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	natsURL    string
	bridge     *exec.Cmd
	bridgeLog  *os.File
	bridgeDone chan struct{} // closed once the bridge has exited and its output is read
	bridgeErr  error         // Wait's result, valid after bridgeDone

	nc       *nats.Conn
	consume  jetstream.ConsumeContext
	events   chan seen
	received int
	shownOne bool // the one event printed in full
	stopping bool
}

// say prints one line of the story.
func (d *demo) say(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

func (d *demo) run(ctx context.Context) error {
	d.start = time.Now()
	if _, err := os.Stat(d.bridgeBin); err != nil {
		return fmt.Errorf("bridge binary: %w (run `make build`, or use `make demo`)", err)
	}
	bins, err := kubeBins(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kubebridge-demo-")
	if err != nil {
		return err
	}
	d.tmp = tmp

	d.say("--- starting etcd and kube-apiserver (from %s)", bins)
	t0 := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{StartTimeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	d.env = env
	// testenv also runs a NATS server for the tests; the demo uses the
	// bridge's embedded one instead, as a first `make run` does.
	env.StopNATS()
	d.say("    kube-apiserver %s ready in %v", env.APIServerURL(), time.Since(t0).Round(100*time.Millisecond))
	rc := env.RESTConfig()
	if d.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if d.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return err
	}

	if err := d.setUp(ctx); err != nil {
		return err
	}
	if err := d.startBridge(); err != nil {
		return err
	}
	if err := d.subscribe(ctx); err != nil {
		return err
	}
	d.say("--- waiting for the start-up snapshot of each type: begin, one item per object, end")
	// The types' snapshots may come in any order.
	pending := map[string]bool{"ConfigMap": true, "Widget": true}
	if err := d.waitFor(ctx, bridgeStart, "snapshot.end of configmaps and widgets", func(s seen) bool {
		if s.typ == "snapshot.end" {
			delete(pending, s.kind)
		}
		return len(pending) == 0
	}); err != nil {
		return err
	}

	if d.up {
		d.attachInfo()
		<-ctx.Done()
		return nil
	}
	if err := d.story(ctx); err != nil {
		return err
	}
	d.say("--- that was every event type; `make demo-up` keeps all of this running so you can attach your own consumer")
	return nil
}

// kubeBins returns $KUBEBRIDGE_KUBE_BINS, building the binaries with
// hack/build-kube-bins.sh (progress on stderr) when it is unset.
func kubeBins(ctx context.Context) (string, error) {
	if dir := os.Getenv(testenv.EnvKubeBins); dir != "" {
		return dir, nil
	}
	const script = "hack/build-kube-bins.sh"
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("$%s is unset and %s is not here: run the demo from the repository root (make demo)", testenv.EnvKubeBins, script)
	}
	fmt.Fprintf(os.Stderr, "demo: $%s is unset; building the control plane with %s (the first build takes ~10 min)\n", testenv.EnvKubeBins, script)
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	dir := strings.TrimSpace(string(out))
	return dir, os.Setenv(testenv.EnvKubeBins, dir)
}

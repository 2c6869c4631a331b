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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
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

// setUp creates what exists before the bridge starts: the namespace, two
// ConfigMaps and the Widget CRD.
func (d *demo) setUp(ctx context.Context) error {
	d.say("--- creating namespace %s", namespace)
	if _, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	d.say("--- creating configmaps %[1]s/app-config and %[1]s/feature-flags (before the bridge starts: its start-up snapshot will report them)", namespace)
	for _, cm := range []*corev1.ConfigMap{
		configMap("app-config", map[string]string{"LOG_LEVEL": "info", "LISTEN": ":8080"}),
		configMap("feature-flags", map[string]string{"new-checkout": "false"}),
	} {
		if _, err := d.cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	d.say("--- creating CustomResourceDefinition %s (kind Widget) and waiting until it is served", crdName)
	if _, err := d.dyn.Resource(crdGVR).Create(ctx, fixtures.WidgetCRD(), metav1.CreateOptions{}); err != nil {
		return err
	}
	return d.waitCRD(ctx)
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "shop"}},
		Data:       data,
	}
}

func widget(name, color string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       map[string]any{"color": color, "size": size},
	}}
}

// waitCRD waits for the CRD's Established condition and for discovery to
// list the resource (the bridge resolves BRIDGE_RESOURCES through it).
func (d *demo) waitCRD(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if d.crdReady(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established and discoverable: %w", crdName, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *demo) crdReady(ctx context.Context) bool {
	crd, err := d.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	established := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false
	}
	list, err := d.cs.Discovery().ServerResourcesForGroupVersion(widgetGVR.GroupVersion().String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == widgetGVR.Resource })
}

// startBridge runs bin/bridge with a minimal environment: no NATS_URL, so it
// starts its embedded NATS server on a free port.
func (d *demo) startBridge() error {
	listen, err := natsListen()
	if err != nil {
		return err
	}
	d.natsURL = "nats://" + listen
	env := []string{
		"KUBECONFIG=" + d.env.KubeconfigPath(),
		"BRIDGE_RESOURCES=" + resources,
		"BRIDGE_NAMESPACES=" + namespace,
		"BRIDGE_CLUSTER_NAME=" + cluster,
		"BRIDGE_EMBEDDED_NATS_LISTEN=" + listen,
		"BRIDGE_EMBEDDED_NATS_STORE_DIR=" + filepath.Join(d.tmp, "jetstream"),
	}
	d.say("--- starting the bridge (NATS_URL unset: it starts an embedded NATS server with JetStream on %s):", listen)
	var shown []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(v, " ;") {
			v = "'" + v + "'"
		}
		shown = append(shown, "      "+k+"="+v)
	}
	d.say("    env -i \\\n%s \\\n      %s", strings.Join(shown, " \\\n"), d.bridgeBin)

	if d.bridgeLog, err = os.Create(filepath.Join(d.tmp, "bridge.log")); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(d.bridgeBin)
	cmd.Env = env
	cmd.Stdout = w
	cmd.Stderr = w
	// Its own process group: a Ctrl-C in the terminal reaches the demo,
	// which then stops the bridge with SIGTERM like an orchestrator would.
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("start %s: %w", d.bridgeBin, err)
	}
	d.bridge = cmd
	d.bridgeDone = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(d.bridgeLog, line)
			d.say("    bridge| %s", klogMessage(line))
		}
		r.Close()
		d.bridgeErr = cmd.Wait()
		close(d.bridgeDone)
	}()
	return nil
}

// natsListen returns 127.0.0.1:4222 if that port is free, else another free
// port.
func natsListen() (string, error) {
	for _, addr := range []string{"127.0.0.1:4222", "127.0.0.1:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		addr = l.Addr().String()
		l.Close()
		return addr, nil
	}
	return "", errors.New("no free port for the embedded NATS server")
}

// klogMessage drops klog's header ("I0102 15:04:05.000000   123 file.go:12] ")
// from a log line, keeping the severity when it is not I(nfo).
func klogMessage(line string) string {
	if len(line) > 1 && strings.ContainsRune("IWEF", rune(line[0])) && line[1] >= '0' && line[1] <= '9' {
		if i := strings.Index(line, "] "); i > 0 {
			msg := strings.Replace(line[i+2:], ` logger="kubebridge"`, "", 1)
			if line[0] == 'I' {
				return msg
			}
			return line[:1] + " " + msg
		}
	}
	return line
}

// bridgeExited reports whether the bridge has exited, for waits.
func (d *demo) bridgeExited() error {
	select {
	case <-d.bridgeDone:
		return fmt.Errorf("the bridge exited early (%v); its log: %s", d.bridgeErr, d.bridgeLog.Name())
	default:
		return nil
	}
}

// subscribe connects to the bridge's NATS server once it is up and reads
// the stream from its first message with an ordered consumer, so nothing
// published before the connection is missed.
func (d *demo) subscribe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, bridgeStart)
	defer cancel()
	var stream jetstream.Stream
	for {
		if err := d.bridgeExited(); err != nil {
			return err
		}
		var err error
		if d.nc == nil {
			d.nc, err = nats.Connect(d.natsURL, nats.Name("kubebridge-demo"), nats.Timeout(time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond))
			if err != nil {
				d.nc = nil
			}
		}
		if d.nc != nil {
			var js jetstream.JetStream
			if js, err = jetstream.New(d.nc); err == nil {
				if stream, err = js.Stream(ctx, streamName); err == nil {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("NATS at %s or stream %s not available: %v (last error: %v)", d.natsURL, streamName, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return err
	}
	d.say("--- reading stream %s (filter %s) from its first message with a JetStream ordered consumer,", streamName, filter)
	d.say("    one line per event: stream seq, ce-type, ce-kind, ce-subject (markers: the NATS subject), ce-resourceversion")
	d.consume, err = cons.Consume(d.onMessage, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		d.mu.Lock()
		quiet := d.stopping
		d.mu.Unlock()
		if !quiet {
			d.say("    (consumer: %v)", err)
		}
	}))
	return err
}

// onMessage prints one compact line per event, and the first update in full.
func (d *demo) onMessage(m jetstream.Msg) {
	msg := &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
	var seq uint64
	if meta, err := m.Metadata(); err == nil {
		seq = meta.Sequence.Stream
	}
	ev, err := cenats.Decode(msg)
	if err != nil {
		d.say("    #%-4d %s: not a CloudEvent: %v", seq, m.Subject(), err)
		return
	}
	ext := func(name string) string { s, _ := ev.Extensions()[name].(string); return s }
	typ := strings.TrimPrefix(strings.TrimPrefix(ev.Type(), "io.kubebridge.object."), "io.kubebridge.")

	var line string
	switch ev.Type() {
	case contract.TypeTerm:
		line = fmt.Sprintf("#%-4d %-15s %-10s %s  (every event after it carries term=%d)", seq, typ, "", ev.Subject(), seq)
	case contract.TypeSnapshotBegin, contract.TypeSnapshotEnd:
		line = fmt.Sprintf("#%-4d %-15s %-10s %s", seq, typ, ext(contract.ExtKind), m.Subject())
		if ev.Type() == contract.TypeSnapshotEnd {
			line += "  count=" + ext(contract.ExtSnapshotCount)
		}
	default:
		line = fmt.Sprintf("#%-4d %-15s %-10s %-26s rv=%s", seq, typ, ext(contract.ExtKind), ev.Subject(), ext(contract.ExtResourceVersion))
		if ev.Type() == contract.TypeUpdated {
			var data struct {
				Old struct {
					Metadata struct {
						ResourceVersion string `json:"resourceVersion"`
					} `json:"metadata"`
				} `json:"oldObject"`
			}
			if json.Unmarshal(ev.Data(), &data) == nil {
				line += " (old rv=" + data.Old.Metadata.ResourceVersion + ")"
			}
		}
		if ext(contract.ExtFinalStateUnknown) == "true" {
			line += " finalstateunknown"
		}
	}
	d.mu.Lock()
	d.received++
	fmt.Println("    " + line)
	if ev.Type() == contract.TypeUpdated && !d.shownOne {
		d.shownOne = true
		fmt.Print(fullMessage(msg))
	}
	d.mu.Unlock()

	select {
	case d.events <- seen{typ: typ, kind: ext(contract.ExtKind), subject: m.Subject()}:
	default: // nobody is waiting (make demo-up)
	}
}

// fullMessage renders a message as it travels: subject, every header, and
// the data (pretty-printed).
func fullMessage(msg *nats.Msg) string {
	var b strings.Builder
	b.WriteString("\n      ┌─ this event in full: the NATS subject, every header (ce-* are the CloudEvent's attributes) and the data\n")
	fmt.Fprintf(&b, "      │ subject: %s\n", msg.Subject)
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(&b, "      │ %s: %s\n", k, v)
		}
	}
	b.WriteString("      │\n")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, msg.Data, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(msg.Data)
	}
	for _, l := range strings.Split(strings.TrimRight(pretty.String(), "\n"), "\n") {
		fmt.Fprintf(&b, "      │ %s\n", l)
	}
	b.WriteString("      └─\n\n")
	return b.String()
}

// waitFor reads events until match returns true.
func (d *demo) waitFor(ctx context.Context, timeout time.Duration, what string, match func(seen) bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case s := <-d.events:
			if match(s) {
				return nil
			}
		case <-d.bridgeDone:
			return d.bridgeExited()
		case <-t.C:
			return fmt.Errorf("no %s event within %v; bridge log: %s", what, timeout, d.bridgeLog.Name())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// step prints a story line, runs act and waits for the event it causes.
func (d *demo) step(ctx context.Context, title, typ, kind, name string, act func() error) error {
	d.say("--- %s", title)
	if err := act(); err != nil {
		return err
	}
	if err := d.waitFor(ctx, eventWait, typ+" "+kind+" "+name, func(s seen) bool {
		return s.typ == typ && s.kind == kind && strings.HasSuffix(s.subject, "."+namespace+"."+contract.EscapeToken(name))
	}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d.pause):
		return nil
	}
}

// story changes objects while the bridge runs: one added, updated and
// deleted event per type.
func (d *demo) story(ctx context.Context) error {
	cms := d.cs.CoreV1().ConfigMaps(namespace)
	widgets := d.dyn.Resource(widgetGVR).Namespace(namespace)
	steps := []struct {
		title, typ, kind, name string
		act                    func() error
	}{
		{"creating configmap demo/cache-settings", "added", "ConfigMap", "cache-settings", func() error {
			_, err := cms.Create(ctx, configMap("cache-settings", map[string]string{"ttl": "30s"}), metav1.CreateOptions{})
			return err
		}},
		{"creating widget demo/gizmo (a custom resource: the same events, through the dynamic client)", "added", "Widget", "gizmo", func() error {
			_, err := widgets.Create(ctx, widget("gizmo", "blue", 3), metav1.CreateOptions{})
			return err
		}},
		{"updating configmap demo/app-config: LOG_LEVEL info -> debug (an update carries the new and the old object)", "updated", "ConfigMap", "app-config", func() error {
			cm, err := cms.Get(ctx, "app-config", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data["LOG_LEVEL"] = "debug"
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
		{"updating widget demo/gizmo: size 3 -> 5", "updated", "Widget", "gizmo", func() error {
			w, err := widgets.Get(ctx, "gizmo", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(w.Object, int64(5), "spec", "size"); err != nil {
				return err
			}
			_, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
			return err
		}},
		{"deleting configmap demo/feature-flags (the event carries its last state)", "deleted", "ConfigMap", "feature-flags", func() error {
			return cms.Delete(ctx, "feature-flags", metav1.DeleteOptions{})
		}},
		{"deleting widget demo/gizmo", "deleted", "Widget", "gizmo", func() error {
			return widgets.Delete(ctx, "gizmo", metav1.DeleteOptions{})
		}},
	}
	for _, s := range steps {
		if err := d.step(ctx, s.title, s.typ, s.kind, s.name, s.act); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

// attachInfo tells how to look at the running demo from elsewhere.
func (d *demo) attachInfo() {
	d.say(`
--- up and running; leave this terminal open (Ctrl-C stops everything and removes the temp dirs)

Kubernetes (kube-apiserver %[1]s, admin token; no controllers run):
    export KUBECONFIG=%[2]s
    kubectl -n demo create configmap hello --from-literal=greeting=hi     # if you have kubectl

NATS (the bridge's embedded server, JetStream stream %[3]s):
    NATS URL: %[4]s
    nats --server %[4]s sub 'kubebridge.demo.>'     # live events
    nats --server %[4]s stream view %[3]s      # what is stored, from the start

The kubebridge CLI (make build puts it in bin/kubebridge):
    bin/kubebridge --server %[5]s --cluster demo get configmaps -A
    bin/kubebridge --server %[5]s --cluster demo watch configmaps -n demo --diff
    bin/kubebridge --server %[5]s --cluster demo verify
    (stream %[6]q, subjects %[7]q)

Go: pkg/consume (docs/consumers.md), a live client-go cache of the stream.

Bridge log: %[8]s (also shown here with "bridge|"). New events are printed below as they arrive:`,
		d.env.APIServerURL(), d.env.KubeconfigPath(), streamName, d.natsURL, d.natsURL, streamName, filter, d.bridgeLog.Name())
}

// cleanup stops the consumer, the bridge (SIGTERM, which must exit 0) and
// the control plane, and removes the temp dirs.
func (d *demo) cleanup(failed bool) error {
	var errs []error
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	if d.consume != nil {
		d.consume.Stop()
	}
	if d.nc != nil {
		d.nc.Close()
	}
	if d.bridge != nil {
		if err := d.stopBridge(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.env != nil {
		d.say("--- stopping kube-apiserver and etcd")
		if failed || len(errs) > 0 {
			d.env.KeepLogs()
			d.say("    kept their logs in %s", d.env.LogDir())
		}
		if err := d.env.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.bridgeLog != nil {
		d.bridgeLog.Close()
	}
	failed = failed || len(errs) > 0
	switch {
	case d.tmp == "":
	case failed:
		d.say("    kept %s (bridge log, NATS store) for a look", d.tmp)
	default:
		errs = append(errs, os.RemoveAll(d.tmp))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if !failed && d.env != nil {
		d.say("--- done in %v: %d events received, temp dirs removed", time.Since(d.start).Round(100*time.Millisecond), d.received)
	}
	return nil
}

func (d *demo) stopBridge() error {
	select {
	case <-d.bridgeDone:
		if d.bridgeErr == nil { // stopped by a Ctrl-C of its own (not on Linux, see sysProcAttr)
			d.say("    bridge exited with status 0")
			return nil
		}
		return fmt.Errorf("the bridge had already exited (%v); log kept in %s", d.bridgeErr, d.bridgeLog.Name())
	default:
	}
	d.say("--- stopping the bridge with SIGTERM")
	_ = d.bridge.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.bridgeDone:
	case <-time.After(stopTimeout):
		_ = d.bridge.Process.Kill()
		<-d.bridgeDone
		return fmt.Errorf("the bridge did not exit within %v of SIGTERM; killed it; log kept in %s", stopTimeout, d.bridgeLog.Name())
	}
	if d.bridgeErr != nil {
		return fmt.Errorf("the bridge exited with %v after SIGTERM; log kept in %s", d.bridgeErr, d.bridgeLog.Name())
	}
	d.say("    bridge exited with status %d", d.bridge.ProcessState.ExitCode())
	return nil
}

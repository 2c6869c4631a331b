package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/internal/netproxy"
	"github.com/kubebridge/kubebridge/internal/testenv"
)

// TestRobustness runs the bridge as etcd's robustness tests run etcd: two
// replicas with leader election on a 3-node NATS cluster with an R3
// stream, under a seeded random schedule of faults (robust_nemesis_test.go)
// while a traffic generator writes (robust_traffic_test.go) and the
// test's own watches record every version the apiserver made
// (robust_history_test.go). Then it reads the stream in full and checks
// every message against that history (robust_validate*_test.go), and the
// end state three ways (robust_resumable_test.go). It writes a report
// with the seed, the fault timeline, every violation beside the object's
// history, and a plot of lag and memory.
//
// It runs only when asked: `make robustness` (about 5 minutes) or `make
// robustness DURATION=1h SEED=42`, which set the variables below.
func TestRobustness(t *testing.T) {
	opts := robustnessOptions(t)
	env := testenv.Get(t)
	t.Logf("robustness: seed %d, duration %v, %v writes/s, report in %s", opts.seed, opts.duration, opts.rate, opts.reportDir)
	w := newWorld(t, env, opts)
	w.start()
	w.runNemesis(opts.duration)
	w.finish()
}

// robustOptions are the run's parameters, from the environment.
type robustOptions struct {
	duration  time.Duration
	seed      uint64
	rate      float64
	objects   int
	reportDir string
}

// robustnessOptions reads KUBEBRIDGE_ROBUSTNESS_DURATION (unset: skip),
// _SEED (unset: from the clock, and logged), _RATE (writes per second),
// _OBJECTS (names per worker, type and namespace) and _REPORT (the
// report's directory).
func robustnessOptions(t *testing.T) robustOptions {
	d := os.Getenv("KUBEBRIDGE_ROBUSTNESS_DURATION")
	if d == "" {
		t.Skip("run by make robustness (KUBEBRIDGE_ROBUSTNESS_DURATION unset)")
	}
	o := robustOptions{rate: 30, objects: 60}
	var err error
	if o.duration, err = time.ParseDuration(d); err != nil {
		t.Fatalf("KUBEBRIDGE_ROBUSTNESS_DURATION=%q: %v", d, err)
	}
	o.seed = uint64(time.Now().UnixNano()) % 1_000_000
	if s := os.Getenv("KUBEBRIDGE_ROBUSTNESS_SEED"); s != "" {
		if o.seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KUBEBRIDGE_ROBUSTNESS_SEED=%q: %v", s, err)
		}
	}
	if s := os.Getenv("KUBEBRIDGE_ROBUSTNESS_RATE"); s != "" {
		if o.rate, err = strconv.ParseFloat(s, 64); err != nil || o.rate <= 0 {
			t.Fatalf("KUBEBRIDGE_ROBUSTNESS_RATE=%q: want writes per second, above 0", s)
		}
	}
	if s := os.Getenv("KUBEBRIDGE_ROBUSTNESS_OBJECTS"); s != "" {
		if o.objects, err = strconv.Atoi(s); err != nil || o.objects <= 0 {
			t.Fatalf("KUBEBRIDGE_ROBUSTNESS_OBJECTS=%q: want a number above 0", s)
		}
	}
	o.reportDir = os.Getenv("KUBEBRIDGE_ROBUSTNESS_REPORT")
	if o.reportDir == "" {
		o.reportDir = filepath.Join(os.TempDir(), fmt.Sprintf("kubebridge-robustness-%d-%s", o.seed, time.Now().UTC().Format("20060102T150405")))
	}
	return o
}

// world is everything one run drives and observes.
type world struct {
	t     *testing.T
	opts  robustOptions
	env   *testenv.Env
	h     *harness
	rng   *rand.Rand
	began time.Time

	cluster   *testenv.NATSCluster
	types     []robustType
	rules     map[string]typeRules
	hist      *historian
	tr        *traffic
	replicas  []*robustPod
	natsLinks []*netproxy.Proxy // every pod's links to every NATS node
	kubeLinks []*netproxy.Proxy // every pod's link to kube-apiserver

	leaseNamespace, leaseName string
	leaseDuration             time.Duration

	faults     []faultSpan
	procs      []*robustProc // every bridge process, in the order started
	samples    []procSample
	timeline   []string
	lastSample time.Time
}

// note adds a line to the run's timeline (and the test's log).
func (w *world) note(format string, args ...any) {
	line := fmt.Sprintf("%8s  ", w.offset(time.Now())) + fmt.Sprintf(format, args...)
	w.timeline = append(w.timeline, line)
	w.t.Log(line)
}

// offset is how long after the start of the run at is, as the timeline
// and the plot count.
func (w *world) offset(at time.Time) string {
	return at.Sub(w.began).Round(100 * time.Millisecond).String()
}

// robustTypes are the types of the run: ConfigMaps with a label selector
// and an ignored annotation, and the Widget custom resource without
// rules.
func robustTypes(h *harness) []robustType {
	return []robustType{
		{resource: "configmaps", gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, apiVersion: "v1", kind: "ConfigMap",
			typ: h.typeSubject("", "v1", "configmaps"), reflectorType: "*v1.ConfigMap", selectable: true, example: func() runtime.Object { return &corev1.ConfigMap{} }},
		{resource: "widgets.example.com", gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, apiVersion: "example.com/v1", kind: "Widget",
			typ: h.typeSubject("example.com", "v1", "widgets"), reflectorType: "example.com/v1, Resource=widgets", example: func() runtime.Object {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
			}},
	}
}

// robustConfig is the bridges' BRIDGE_CONFIG file.
func robustConfig(types []robustType) string {
	var b strings.Builder
	b.WriteString("apiVersion: kubebridge.io/v1alpha1\nkind: BridgeConfiguration\nresources:\n")
	for _, t := range types {
		fmt.Fprintf(&b, "- resource: %s\n", t.resource)
		if t.selectable {
			fmt.Fprintf(&b, "  labelSelector: %q\n  ignoreFields: [[metadata, annotations, %q]]\n", "!"+robustOutLabel, robustIgnoredAnnot)
		}
	}
	return b.String()
}

// robustRules is what the validators need of the configuration, written
// from robustConfig's meaning, not from the bridge's code.
func robustRules(types []robustType) map[string]typeRules {
	out := map[string]typeRules{}
	for _, t := range types {
		selectable := t.selectable
		out[t.typ] = typeRules{
			typ: t.typ,
			inScope: func(obj map[string]any) bool {
				if !selectable {
					return true
				}
				_, out, _ := unstructured.NestedString(obj, "metadata", "labels", robustOutLabel)
				return !out
			},
			project: func(obj map[string]any) map[string]any {
				c := runtime.DeepCopyJSON(obj)
				meta, _ := c["metadata"].(map[string]any)
				delete(meta, "managedFields")
				annotations, _ := meta["annotations"].(map[string]any)
				delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
				if selectable {
					delete(annotations, robustIgnoredAnnot)
				}
				return c
			},
		}
	}
	return out
}

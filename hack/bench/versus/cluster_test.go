package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func clusterBench(pods, objects, changes int, meaningful float64) *bench {
	return &bench{pods: pods, objects: objects, size: 64, layout: layout{namespaces: 1},
		churn: churnOptions{mix: churnMix{cluster: changes}, meaningful: meaningful}}
}

func TestParseClusterMix(t *testing.T) {
	m, err := parseChurnMix(" cluster ", 500)
	if err != nil || m.total() != 500 || m.cluster != 500 || m.updates != 0 {
		t.Errorf("cluster: %+v, %v", m, err)
	}
	if kind, j := m.at(321); kind != clusterChange || j != 321 {
		t.Errorf("at(321) = %v, %d", kind, j)
	}
	if _, err := parseChurnMix("update,cluster", 10); err == nil || !strings.Contains(err.Error(), "list it alone") {
		t.Errorf("cluster with update: %v", err)
	}
}

// The plan: about -meaningful of the changes are meaningful, a Pod's
// noise is mostly status, a ConfigMap's is heartbeats, and the markers
// are meaningful and last, one per type.
func TestClusterPlan(t *testing.T) {
	b := clusterBench(1000, 1000, 40_000, 0.05)
	cp := b.clusterPlan(3)
	k := cp.kinds
	if got := float64(cp.meaningful()) / 40_000; got < 0.045 || got > 0.055 {
		t.Errorf("meaningful share %.4f, want about 0.05 (%v)", got, k)
	}
	if pods, cms := k[podStatus]+k[podHeartbeat]+k[podImage]+k[podLabel], k[cmHeartbeat]+k[cmData]+k[cmLabel]; pods != 20_001 || cms != 19_999 {
		// Half each, but the Pod marker takes a ConfigMap's turn.
		t.Errorf("%d Pod and %d ConfigMap changes, want half each", pods, cms)
	}
	if share := float64(k[podStatus]) / float64(k[podStatus]+k[podHeartbeat]); share < 0.73 || share > 0.77 {
		t.Errorf("status share of the Pods' noise %.3f, want 0.75", share)
	}
	if last, before := b.plan(39_999, 3), b.plan(39_998, 3); last != (planned{kind: cmData}) || before != (planned{kind: podImage}) {
		t.Errorf("markers %+v, %+v", before, last)
	}
	if b.markers() != 2 || clusterBench(0, 10, 100, 0.05).markers() != 1 || clusterBench(5, 5, 1, 0.05).markers() != 1 {
		t.Error("markers: one per type watched, at most every change")
	}
	if again := b.clusterPlan(3); again.kinds != cp.kinds || len(again.last) != len(cp.last) {
		t.Error("the plan is not a function of the run")
	}
	if other := b.clusterPlan(4); other.kinds == cp.kinds {
		t.Error("two runs drew the same changes")
	}
	none := clusterBench(10, 10, 1000, 0).clusterPlan(0)
	if none.meaningful() != 2 {
		t.Errorf("-meaningful 0: %d meaningful, want the 2 markers", none.meaningful())
	}
	if all := clusterBench(10, 10, 1000, 1).clusterPlan(0); all.meaningful() != 1000 {
		t.Errorf("-meaningful 1: %d meaningful, want all", all.meaningful())
	}
}

// The plan's last values are those of the last meaningful change of each
// object and field.
func TestClusterPlanKeepsTheLastValue(t *testing.T) {
	b := clusterBench(2, 2, 400, 0.5)
	cp := b.clusterPlan(1)
	want := map[objectKey]map[string]string{}
	for k := range 400 {
		p := b.plan(k, 1)
		if p.kind.meaningful() {
			key := objectKey{pod: p.kind.pod(), index: p.index}
			if want[key] == nil {
				want[key] = map[string]string{}
			}
			want[key][p.field(k)] = p.value(k, 1, b.size)
		}
	}
	if len(cp.last) != 4 {
		t.Fatalf("%d objects changed meaningfully, want all 4", len(cp.last))
	}
	for key, fields := range want {
		for f, v := range fields {
			if cp.last[key][f] != v {
				t.Errorf("%v %s = %q, want %q", key, f, cp.last[key][f], v)
			}
		}
	}
	if v := cp.last[objectKey{}]["data/key-3"]; len(v) != b.size/4 {
		t.Errorf("ConfigMap 0's marker data %q, want %d bytes", v, b.size/4)
	}
}

// A status patch is a kubelet's: the readiness conditions with probe and
// transition times and the container's restarts; two of one Pod differ.
func TestStatusPatch(t *testing.T) {
	b := clusterBench(4, 4, 100, 0)
	var patches [][]byte
	for k := 0; k < 80; k++ {
		if p := b.plan(k, 2); p.kind == podStatus && p.index == 1 {
			body, pt, sub, err := b.body(p, k, 2, time.Unix(1_800_000_000, 0))
			if err != nil || pt != "application/strategic-merge-patch+json" || !slices.Equal(sub, []string{"status"}) {
				t.Fatalf("body: %s %v %v", pt, sub, err)
			}
			patches = append(patches, body)
		}
	}
	if len(patches) < 2 {
		t.Fatalf("%d status patches of Pod 1", len(patches))
	}
	var st struct {
		Status corev1.PodStatus `json:"status"`
	}
	if err := json.Unmarshal(patches[0], &st); err != nil {
		t.Fatal(err)
	}
	c := st.Status.ContainerStatuses
	if len(st.Status.Conditions) != 2 || st.Status.Conditions[0].LastProbeTime.IsZero() || len(c) != 1 || c[0].Name != "app" || c[0].RestartCount < 1 || c[0].LastTerminationState.Terminated == nil {
		t.Errorf("status patch %s", patches[0])
	}
	last := c[0].RestartCount
	for _, p := range patches[1:] {
		if err := json.Unmarshal(p, &st); err != nil {
			t.Fatal(err)
		}
		if n := st.Status.ContainerStatuses[0].RestartCount; n <= last {
			t.Errorf("restarts %d after %d: a status patch may change nothing", n, last)
		}
		last = st.Status.ContainerStatuses[0].RestartCount
	}
}

func TestPublishedFields(t *testing.T) {
	got, err := publishedFields([]byte(`{"object":{"metadata":{"labels":{"version":"1.2"}},"spec":{"containers":[{"image":"a:1"}]},"data":{"key-0":"x"}},"patch":[]}`))
	if err != nil || got["label"] != "1.2" || got["image"] != "a:1" || got["data/key-0"] != "x" {
		t.Errorf("%v %v", got, err)
	}
	if _, err := publishedFields([]byte(`{"patch":[]}`)); err == nil {
		t.Error("an event without an object passed")
	}
}

func TestCheckWorkload(t *testing.T) {
	modes := func(s string) []mode {
		ms, err := selectModes(s)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	cluster := churnMix{cluster: 100}
	for _, tc := range []struct {
		o     options
		mix   churnMix
		modes string
		err   string
	}{
		{options{pods: 10}, cluster, "bridge-typed,bridge-typed+config=rules.yaml,bridge-dynamic", ""},
		{options{}, cluster, "typed,bridge-typed", ""},
		{options{pods: 10}, cluster, "bridge-typed,typed", "mode typed: with -pods only unsharded bridge modes run"},
		{options{pods: 10}, cluster, "bridge-shard@0/2", "mode bridge-shard@0/2: with -pods only"},
		{options{}, cluster, "typed-shard@0/2", "mode typed-shard@0/2: the cluster mix runs unsharded modes only"},
		{options{}, churnMix{updates: 10}, "bridge-typed+config=rules.yaml", "+config= needs -churn-mix cluster"},
	} {
		err := checkWorkload(tc.o, tc.mix, modes(tc.modes))
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.modes, err, tc.err)
		}
	}
	t.Setenv("BRIDGE_CONFIG", "rules.yaml")
	if err := checkWorkload(options{}, cluster, modes("bridge-typed")); err == nil || !strings.Contains(err.Error(), "mode+config=PATH") {
		t.Errorf("BRIDGE_CONFIG in the environment: %v", err)
	}
}

// A bridge watches the Pods with -pods; a rules file lists the resources
// instead of BRIDGE_RESOURCES.
func TestBridgeResources(t *testing.T) {
	for _, tc := range []struct {
		b    bridgeChild
		want string
	}{
		{bridgeChild{kind: kindNamed("bridge-typed"), namespaces: 1}, "configmaps"},
		{bridgeChild{kind: kindNamed("bridge-typed"), namespaces: 1, pods: true}, "configmaps; pods"},
		{bridgeChild{kind: kindNamed("bridge-typed"), namespaces: 3, pods: true}, "configmaps | labels=app=bench-versus; pods | labels=app=bench-versus"},
	} {
		env, err := tc.b.env()
		if err != nil || env["BRIDGE_RESOURCES"] != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.b, env["BRIDGE_RESOURCES"], err, tc.want)
		}
	}
	t.Setenv("BRIDGE_CONFIG", "/rules.yaml")
	env, err := bridgeChild{kind: kindNamed("bridge-typed"), namespaces: 1, pods: true}.env()
	if _, set := env["BRIDGE_RESOURCES"]; err != nil || set || env["BRIDGE_CONFIG"] != "/rules.yaml" {
		t.Errorf("with a rules file: %v, %v", env, err)
	}
}

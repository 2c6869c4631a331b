package bridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestMetricsAfterKnownWorkload scrapes /metrics after a workload whose
// every count is known, and checks /readyz and /healthz.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	cluster.create(t, cluster.configMap("default", "pre-1", nil))
	cluster.create(t, cluster.configMap("default", "pre-2", nil))

	addr := make(chan net.Addr, 1)
	startBridgeWith(t, testConfig(t, nil), cluster.kube(), nc, WithListening(func(a net.Addr) { addr <- a }))
	base := "http://" + (<-addr).String()

	var created []*corev1.ConfigMap
	for i := range 3 {
		created = append(created, cluster.create(t, cluster.configMap("default", fmt.Sprintf("new-%d", i), map[string]string{"v": "1"})))
	}
	changed := created[0].DeepCopy()
	changed.Data["v"] = "2"
	cluster.update(t, changed)
	cluster.delete(t, "default", "pre-1")
	waitFor(t, js, "the workload's events", 10*time.Second, func(m []replay.Message) bool {
		return countType(m, contract.TypeDeleted) == 1 && countType(m, contract.TypeUpdated) == 1 && countType(m, contract.TypeAdded) == 3
	})

	// Acknowledgements are counted in a callback that can trail the stored
	// message by a moment; poll until the counts settle.
	want := map[string]string{
		`kubebridge_events_published_total{resource="configmaps.v1",type="snapshot.begin"}`: "1",
		`kubebridge_events_published_total{resource="configmaps.v1",type="snapshot.item"}`:  "2",
		`kubebridge_events_published_total{resource="configmaps.v1",type="snapshot.end"}`:   "1",
		`kubebridge_events_published_total{resource="configmaps.v1",type="added"}`:          "3",
		`kubebridge_events_published_total{resource="configmaps.v1",type="updated"}`:        "1",
		`kubebridge_events_published_total{resource="configmaps.v1",type="deleted"}`:        "1",
		`kubebridge_changes_observed_total{resource="configmaps.v1",verb="added"}`:          "3",
		`kubebridge_changes_observed_total{resource="configmaps.v1",verb="updated"}`:        "1",
		`kubebridge_changes_observed_total{resource="configmaps.v1",verb="deleted"}`:        "1",
		`kubebridge_snapshots_total{reason="start-up",resource="configmaps.v1"}`:            "1",
		`kubebridge_snapshot_items_total{resource="configmaps.v1"}`:                         "2",
		`kubebridge_publish_rejected_total`:                                                 "0",
		`kubebridge_publish_buffer_limit_bytes`:                                             "1.6777216e+07",
		`kubebridge_publish_buffer_bytes`:                                                   "0",
		`kubebridge_pending_objects`:                                                        "0",
		`kubebridge_resource_ready{resource="configmaps.v1"}`:                               "1",
		`kubebridge_publish_in_flight`:                                                      "0",
		`kubebridge_nats_connected`:                                                         "1",
		`kubebridge_publish_latency_seconds_count`:                                          "9",
	}
	var got map[string]string
	// A timeout is reported by the mismatch below.
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		got = scrape(t, base+"/metrics")
		return mismatch(want, got) == "", nil
	})
	if m := mismatch(want, got); m != "" {
		t.Error(m)
	}
	for _, name := range []string{"kubebridge_changes_coalesced_total", "kubebridge_events_superseded_total", "kubebridge_unpublishable_objects_total", "kubebridge_snapshot_failures_total", "kubebridge_oversize_objects_total"} {
		for k, v := range got {
			if strings.HasPrefix(k, name) && v != "0" {
				t.Errorf("%s = %s, want 0", k, v)
			}
		}
	}
	if v := got["kubebridge_last_publish_timestamp_seconds"]; v == "" || v == "0" {
		t.Errorf("last publish timestamp %q", v)
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		code, body := get(t, base+path)
		if code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
}

func TestReadinessAndLiveness(t *testing.T) {
	if err := readiness(nil, false, false); err == nil || err.Error() != "resource types not resolved yet; NATS not connected" {
		t.Errorf("readiness = %v", err)
	}
	m := metrics.New()
	var readies int
	cm, secrets := newTypeStatus("configmaps.v1", m, func() { readies++ }), newTypeStatus("secrets.v1", m, func() { readies++ })
	types := []*typeStatus{cm, secrets}
	cm.setSynced()
	cm.setSnapshotted()
	err := readiness(types, true, true)
	if err == nil || err.Error() != "secrets.v1: informer cache not synced (list or watch failing?)" {
		t.Errorf("readiness with secrets not synced = %v", err)
	}
	secrets.setSynced()
	if err := readiness(types, true, true); err == nil || err.Error() != "secrets.v1: start-up snapshot not stored" {
		t.Errorf("readiness with secrets synced = %v", err)
	}
	secrets.setSnapshotted()
	secrets.setSnapshotted()
	if err := readiness(types, true, true); err != nil {
		t.Errorf("readiness = %v", err)
	}
	if readies != 2 {
		t.Errorf("onReady called %d times, want once per type", readies)
	}
	for _, r := range []string{"configmaps.v1", "secrets.v1"} {
		var d dto.Metric
		if err := m.ResourceReady.WithLabelValues(r).Write(&d); err != nil || d.GetGauge().GetValue() != 1 {
			t.Errorf("resource_ready{%s} = %v (%v)", r, d.GetGauge().GetValue(), err)
		}
	}

	l := newLiveness(time.Millisecond)
	var never time.Time
	if err := l.check(true, 0, never); err != nil {
		t.Errorf("idle bridge not live: %v", err)
	}
	// The sleeps let stuckAfter pass: the time is what is under test.
	time.Sleep(5 * time.Millisecond)
	if err := l.check(false, 3, never); err != nil {
		t.Errorf("a NATS outage made the bridge not live: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	if err := l.check(true, 3, never); err == nil {
		t.Error("work waiting with NATS connected and nothing happening: still live")
	}
	// Failing attempts (JetStream unavailable while NATS is connected) are
	// activity: the loop is not stuck.
	if err := l.check(true, 3, time.Now()); err != nil {
		t.Errorf("recent publish attempts made the bridge not live: %v", err)
	}
}

func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", url, code)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

func mismatch(want, got map[string]string) string {
	var b strings.Builder
	for k, v := range want {
		if got[k] != v {
			fmt.Fprintf(&b, "%s = %q, want %q\n", k, got[k], v)
		}
	}
	return b.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestProfilesOnlyWhenAsked: /debug/pprof/ is served with BRIDGE_PPROF=true
// and not without it.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		nc, _ := connect(t, startNATS(t).url())
		cluster := newFakeCluster()
		addr := make(chan net.Addr, 1)
		r := startBridgeWith(t, testConfig(t, map[string]string{"BRIDGE_PPROF": fmt.Sprint(on)}), cluster.kube(), nc,
			WithListening(func(a net.Addr) { addr <- a }))
		base := "http://" + (<-addr).String()
		for path, want := range map[string]int{"/debug/pprof/cmdline": http.StatusNotFound, "/debug/pprof/": http.StatusNotFound, "/metrics": http.StatusOK} {
			if on && path != "/metrics" {
				want = http.StatusOK
			}
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("BRIDGE_PPROF=%v: GET %s: %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		r.stop(t)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// scrapeTotals adds up every resource's series, and reads the publish
// latency beside the lag.
func TestScrapeTotalsReadsLagAndPublishLatency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP kubebridge_event_lag_seconds x
kubebridge_event_lag_seconds_bucket{resource="configmaps.v1",le="+Inf"} 3
kubebridge_event_lag_seconds_sum{resource="configmaps.v1"} 0.5
kubebridge_event_lag_seconds_count{resource="configmaps.v1"} 3
kubebridge_event_lag_seconds_sum{resource="pods.v1"} 0.25
kubebridge_event_lag_seconds_count{resource="pods.v1"} 2
kubebridge_publish_latency_seconds_bucket{le="+Inf"} 7
kubebridge_publish_latency_seconds_sum 0.07
kubebridge_publish_latency_seconds_count 7
kubebridge_snapshot_duration_seconds_sum{resource="configmaps.v1"} 1.5
`)
	}))
	defer srv.Close()
	got := scrapeTotals(srv.URL)
	want := bridgeTotals{SnapshotSecs: 1.5, LagSumSecs: 0.75, LagCount: 5, PublishSumSecs: 0.07, PublishCount: 7}
	if got != want {
		t.Errorf("scrapeTotals = %+v, want %+v", got, want)
	}
}

// A child's totals reach the parent in its JSON line under their own
// names.
func TestBridgeTotalsTravelInTheResultLine(t *testing.T) {
	sent := result{Mode: "bridge-typed", bridgeTotals: bridgeTotals{SnapshotSecs: 1.5, LagSumSecs: 0.75, LagCount: 5, PublishSumSecs: 0.07, PublishCount: 7}}
	line, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"publishLatencyCount":7`) {
		t.Errorf("line %s lacks publishLatencyCount", line)
	}
	var got result
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	if got.bridgeTotals != sent.bridgeTotals {
		t.Errorf("totals %+v arrived as %+v", sent.bridgeTotals, got.bridgeTotals)
	}
}

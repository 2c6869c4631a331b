package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// bridgeTotals is what a bridge child's /metrics held at a measurement;
// 0s for an informer.
type bridgeTotals struct {
	// SnapshotSecs is the bridge's start-up snapshot, begin marker to the
	// end marker's acknowledgement (kubebridge_snapshot_duration_seconds);
	// for publish-raw and publish-raw-items, the first publish to the last
	// acknowledgement (publishRaw).
	SnapshotSecs float64 `json:"snapshotSeconds"`
	// LagSumSecs and LagCount are kubebridge_event_lag_seconds' sum and
	// count over every resource: from a change observed to its
	// acknowledgement.
	LagSumSecs float64 `json:"eventLagSumSeconds"`
	LagCount   float64 `json:"eventLagCount"`
	// PublishSumSecs and PublishCount are kubebridge_publish_latency_seconds'
	// sum and count: from a publish attempt to its acknowledgement, how
	// much of the lag is the wait for JetStream.
	PublishSumSecs float64 `json:"publishLatencySumSeconds"`
	PublishCount   float64 `json:"publishLatencyCount"`
}

// scrapeTotals reads a bridge child's totals from its /metrics; zeros if
// it cannot.
func scrapeTotals(url string) bridgeTotals {
	var t bridgeTotals
	scrapeMetrics(&http.Client{Timeout: 5 * time.Second}, url, func(name string, v float64) {
		switch {
		case strings.HasPrefix(name, "kubebridge_snapshot_duration_seconds_sum"):
			t.SnapshotSecs += v
		case strings.HasPrefix(name, "kubebridge_event_lag_seconds_sum"):
			t.LagSumSecs += v
		case strings.HasPrefix(name, "kubebridge_event_lag_seconds_count"):
			t.LagCount += v
		case strings.HasPrefix(name, "kubebridge_publish_latency_seconds_sum"):
			t.PublishSumSecs += v
		case strings.HasPrefix(name, "kubebridge_publish_latency_seconds_count"):
			t.PublishCount += v
		}
	})
	return t
}

// scrapeGauges reads kubebridge_pending_objects and
// kubebridge_publish_buffer_bytes from the bridge's /metrics.
func scrapeGauges(client *http.Client, url string) (pending, buffered int64) {
	pending, buffered = -1, -1
	scrapeMetrics(client, url, func(name string, v float64) {
		switch name {
		case "kubebridge_pending_objects":
			pending = int64(v)
		case "kubebridge_publish_buffer_bytes":
			buffered = int64(v)
		}
	})
	return
}

// scrapeMetrics calls fn with every sample's name (labels included) and
// value in the text exposition at url; nothing if it cannot be read.
func scrapeMetrics(client *http.Client, url string, fn func(name string, v float64)) {
	resp, err := client.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			fn(name, f)
		}
	}
}

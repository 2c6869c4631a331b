// Package metrics owns the bridge's Prometheus metrics and its operational
// HTTP endpoints (/metrics, /healthz, /readyz). Metrics live in a registry
// per Metrics value, never in package state.
package metrics

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const namespace = "kubebridge"

// Metrics are the bridge's counters, gauges and histograms.
type Metrics struct {
	Registry *prometheus.Registry

	ChangesObserved   *prometheus.CounterVec
	ChangesDropped    *prometheus.CounterVec
	EventsPublished   *prometheus.CounterVec
	EventsSuperseded  *prometheus.CounterVec
	EncodeErrors      *prometheus.CounterVec
	OversizeObjects   *prometheus.CounterVec
	PublishRetries    prometheus.Counter
	PublishRejected   prometheus.Counter
	PublishDuplicates prometheus.Counter
	PublishLatency    prometheus.Histogram
	InFlight          prometheus.Gauge
	LastPublish       prometheus.Gauge
	Snapshots         *prometheus.CounterVec
	SnapshotDuration  *prometheus.HistogramVec
	SnapshotItems     *prometheus.CounterVec
	DirtyResnapshots  *prometheus.CounterVec
	WatchErrors       *prometheus.CounterVec
}

// New registers every metric, plus the Go and process collectors, in a new
// registry.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		ChangesObserved: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_observed_total",
			Help: "Informer callbacks turned into changes, by resource and verb (added, updated, deleted)."}, []string{"resource", "verb"}),
		ChangesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_dropped_total",
			Help: "Changes dropped because the queue was full; each marks the type for a fresh snapshot."}, []string{"resource"}),
		EventsPublished: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_published_total",
			Help: "Events acknowledged by JetStream, by resource and event type (added, updated, deleted, snapshot.begin, snapshot.item, snapshot.end)."}, []string{"resource", "type"}),
		EventsSuperseded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_superseded_total",
			Help: "Changes not published because a newer state of the object was already published."}, []string{"resource"}),
		EncodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "encode_errors_total",
			Help: "Changes that could not be encoded and were not published."}, []string{"resource"}),
		OversizeObjects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "oversize_objects_total",
			Help: "Events published truncated (metadata only) because the object exceeded the NATS max payload."}, []string{"resource"}),
		PublishRetries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "publish_retries_total",
			Help: "Publish attempts that failed and were retried."}),
		PublishRejected: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "publish_rejected_total",
			Help: "Publishes rejected for good (e.g. too large for the stream); not retried."}),
		PublishDuplicates: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "publish_duplicates_total",
			Help: "Publishes JetStream acknowledged as duplicates of a stored message (same Nats-Msg-Id)."}),
		PublishLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "publish_latency_seconds",
			Help: "Time from a publish attempt to its JetStream acknowledgement.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "publish_in_flight",
			Help: "Publishes awaiting acknowledgement."}),
		LastPublish: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "last_publish_timestamp_seconds",
			Help: "Unix time of the last acknowledged publish."}),
		Snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "snapshots_total",
			Help: "Snapshots published, by resource and reason (start-up, periodic, dropped-changes)."}, []string{"resource", "reason"}),
		SnapshotDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "snapshot_duration_seconds",
			Help: "Time from a snapshot's begin marker being queued to its end marker being acknowledged.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"resource"}),
		SnapshotItems: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "snapshot_items_total",
			Help: "Objects listed into snapshots."}, []string{"resource"}),
		DirtyResnapshots: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "dirty_resnapshots_total",
			Help: "Snapshots published because changes of the type were dropped."}, []string{"resource"}),
		WatchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_errors_total",
			Help: "Watch or list failures of an informer; each is followed by a relist."}, []string{"resource"}),
	}
	r.MustRegister(m.ChangesObserved, m.ChangesDropped, m.EventsPublished, m.EventsSuperseded, m.EncodeErrors, m.OversizeObjects,
		m.PublishRetries, m.PublishRejected, m.PublishDuplicates, m.PublishLatency, m.InFlight, m.LastPublish,
		m.Snapshots, m.SnapshotDuration, m.SnapshotItems, m.DirtyResnapshots, m.WatchErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// QueueGauges exposes the queue's depth and capacity, read at scrape time.
func (m *Metrics) QueueGauges(depth, capacity func() int) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "queue_depth", Help: "Changes waiting between the informers and the encoders."},
			func() float64 { return float64(depth()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "queue_capacity", Help: "BRIDGE_QUEUE_SIZE."},
			func() float64 { return float64(capacity()) }))
}

// NATSConnected exposes whether the NATS connection is up, read at scrape time.
func (m *Metrics) NATSConnected(connected func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "nats_connected", Help: "1 while connected to NATS."},
		func() float64 {
			if connected() {
				return 1
			}
			return 0
		}))
}

// PublishObserver adapts the metrics to sink.Observer.
type PublishObserver struct{ M *Metrics }

// Acked records an acknowledged publish.
func (o PublishObserver) Acked(_ *nats.Msg, latency time.Duration, duplicate bool) {
	o.M.PublishLatency.Observe(latency.Seconds())
	o.M.LastPublish.Set(float64(time.Now().UnixNano()) / 1e9)
	if duplicate {
		o.M.PublishDuplicates.Inc()
	}
}

// Retried records a failed attempt that will be retried.
func (o PublishObserver) Retried(*nats.Msg, error) { o.M.PublishRetries.Inc() }

// Rejected records a publish given up for good.
func (o PublishObserver) Rejected(*nats.Msg, error) { o.M.PublishRejected.Inc() }

// InFlight records the number of unacknowledged publishes.
func (o PublishObserver) InFlight(n int) { o.M.InFlight.Set(float64(n)) }

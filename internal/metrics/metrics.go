package metrics

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

const namespace = "kubebridge"

// Metrics are the bridge's counters, gauges and histograms.
type Metrics struct {
	Registry *prometheus.Registry

	ChangesObserved   *prometheus.CounterVec
	ChangesCoalesced  *prometheus.CounterVec
	EventsPublished   *prometheus.CounterVec
	EventLag          *prometheus.HistogramVec
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
	SnapshotFailures  *prometheus.CounterVec
	MissedDeletes     *prometheus.CounterVec
	Unpublishable     *prometheus.CounterVec
	ResourceReady     *prometheus.GaugeVec
	WatchErrors       *prometheus.CounterVec
	ForeignObjects    *prometheus.CounterVec
	JetStreamWaits    prometheus.Counter
}

// New registers every metric, plus the Go and process collectors, in a new
// registry.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		ChangesObserved: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_observed_total",
			Help: "Informer callbacks turned into changes, by resource and verb (added, updated, deleted)."}, []string{"resource", "verb"}),
		ChangesCoalesced: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_coalesced_total",
			Help: "Changes not published as events of their own while publishing was behind: merged into a pending change of the same object, cancelled out (added then deleted), or superseded by a snapshot item. observed = published added/updated/deleted + coalesced + superseded."}, []string{"resource"}),
		EventsPublished: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_published_total",
			Help: "Events acknowledged by JetStream, by resource and event type (added, updated, deleted, snapshot.begin, snapshot.item, snapshot.end)."}, []string{"resource", "type"}),
		EventLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "event_lag_seconds",
			Help:    "Time from the bridge observing a change (its informer's notification) to JetStream acknowledging the event that carries it; for an event standing for several changes (coalesced), from the oldest. Live changes only: added, updated and deleted events, and snapshot items that replaced a waiting change. The number to set a freshness SLO on.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}}, []string{"resource"}),
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
			Help: "Snapshots published, by resource and reason (start-up, periodic)."}, []string{"resource", "reason"}),
		SnapshotDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "snapshot_duration_seconds",
			Help: "Time from a snapshot being requested to its end marker being acknowledged.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"resource"}),
		SnapshotItems: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "snapshot_items_total",
			Help: "Snapshot items stored."}, []string{"resource"}),
		SnapshotFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "snapshot_failures_total",
			Help: "Snapshots whose end marker could not be published; each is tried again with backoff."}, []string{"resource"}),
		MissedDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "missed_deletes_total",
			Help: "Objects the stream still showed at start-up that the cluster no longer has (deleted while no bridge was publishing); each is published as deleted with finalstateunknown and also counted in changes_observed_total."}, []string{"resource"}),
		Unpublishable: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "unpublishable_objects_total",
			Help: "Object states that could not be published even without their content (counted once per resourceVersion)."}, []string{"resource"}),
		ResourceReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "resource_ready",
			Help: "1 once the type's cache has synced and its start-up snapshot is stored, else 0."}, []string{"resource"}),
		WatchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "watch_errors_total",
			Help: "Watch or list failures of an informer; each is followed by a relist."}, []string{"resource"}),
		ForeignObjects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "shard_foreign_objects_total",
			Help: "Objects of other shards a shard's informers received (in lists and watch events) and dropped before its cache: all of theirs when the apiserver ignores the shard selector, those of namespaces created since the shard last built its selector (BRIDGE_SHARD_SELECTOR_REFRESH) when it applies it."}, []string{"resource"}),
		JetStreamWaits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "jetstream_unavailable_total",
			Help: "Failed attempts to reach the JetStream stream at start-up (no responders, no leader, timeouts)."}),
	}
	r.MustRegister(m.ChangesObserved, m.ChangesCoalesced, m.EventsPublished, m.EventLag, m.EventsSuperseded, m.EncodeErrors, m.OversizeObjects,
		m.PublishRetries, m.PublishRejected, m.PublishDuplicates, m.PublishLatency, m.InFlight, m.LastPublish,
		m.Snapshots, m.SnapshotDuration, m.SnapshotItems, m.SnapshotFailures, m.MissedDeletes, m.Unpublishable, m.ResourceReady, m.WatchErrors, m.ForeignObjects, m.JetStreamWaits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// InitResource creates the series of a watched type at zero, so that every
// series exists from the start: an alert on increase() then sees the first
// failure, and a dashboard shows a zero rather than no data.
func (m *Metrics) InitResource(resource string) {
	for _, verb := range []string{"added", "updated", "deleted"} {
		m.ChangesObserved.WithLabelValues(resource, verb)
	}
	for _, typ := range []string{"added", "updated", "deleted", "snapshot.begin", "snapshot.item", "snapshot.end"} {
		m.EventsPublished.WithLabelValues(resource, typ)
	}
	for _, v := range []*prometheus.CounterVec{m.ChangesCoalesced, m.EventsSuperseded, m.EncodeErrors, m.OversizeObjects,
		m.SnapshotItems, m.SnapshotFailures, m.MissedDeletes, m.Unpublishable, m.WatchErrors} {
		v.WithLabelValues(resource)
	}
	m.EventLag.WithLabelValues(resource)
	m.SnapshotDuration.WithLabelValues(resource)
}

// IntakeGauges exposes the objects waiting to be published and the bytes
// of encoded events buffered or in flight, read at scrape time.
func (m *Metrics) IntakeGauges(pendingObjects func() int, bufferedBytes func() int64, bufferLimit int64) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "pending_objects", Help: "Objects with a change waiting to be published or in flight."},
			func() float64 { return float64(pendingObjects()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "publish_buffer_bytes", Help: "Bytes of encoded events buffered for or in flight to JetStream."},
			func() float64 { return float64(bufferedBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "publish_buffer_limit_bytes", Help: "BRIDGE_PUBLISH_BUFFER_BYTES."},
			func() float64 { return float64(bufferLimit) }))
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

// Total sums every series of a counter vector: what the shutdown line and
// the first-event log report, read from the metrics rather than kept twice.
func Total(c *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil && d.Counter != nil {
			sum += d.Counter.GetValue()
		}
	}
	return sum
}

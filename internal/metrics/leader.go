package metrics

import "github.com/prometheus/client_golang/prometheus"

// Leadership is what a replica reports about leader election.
type Leadership struct {
	// Leader is 1 while this replica publishes.
	Leader prometheus.Gauge
	// Transitions counts the times this replica started or stopped
	// leading.
	Transitions prometheus.Counter
	// Term is the term this replica publishes in: the stream sequence of
	// its term marker; 0 for a standby.
	Term prometheus.Gauge
}

// Leadership registers the leader election metrics.
func (m *Metrics) Leadership() Leadership {
	l := Leadership{
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "leader",
			Help: "1 while this replica publishes (it holds the Lease, or leader election is off), 0 for a standby."}),
		Transitions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "leadership_transitions_total",
			Help: "Times this replica started or stopped leading."}),
		Term: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "term",
			Help: "The term this replica publishes in (the stream sequence of its term marker); 0 for a standby."}),
	}
	m.Registry.MustRegister(l.Leader, l.Transitions, l.Term)
	return l
}

// FenceRefusals registers the count of publishes JetStream refused because
// their subject had moved on, by how they were resolved (the subject's last
// message was an older term's, overwritten, or this term's own, adopted),
// and the count of foreign messages found on the bridge's subjects. A
// refusal by a newer term ends the replica and is logged instead.
func (m *Metrics) FenceRefusals(overwrote, adopted, foreign func() int64) {
	for outcome, f := range map[string]func() int64{"overwrote": overwrote, "adopted": adopted} {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "fence_refusals_total",
			Help:        "Publishes refused for their subject's last sequence, by resolution: overwrote (an older term's message) or adopted (this term's own).",
			ConstLabels: prometheus.Labels{"outcome": outcome}}, func() float64 { return float64(f()) }))
	}
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "foreign_messages_total",
		Help: "Messages on the bridge's subjects that no bridge of this cluster wrote (no CloudEvents headers, or a term no term marker backs), found under a refused publish or by the start-up scan. Each is overwritten at the object's next publish, and never fences the bridge."},
		func() float64 { return float64(foreign()) }))
}

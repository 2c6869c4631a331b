package metrics

import "github.com/prometheus/client_golang/prometheus"

// Leadership is what a replica reports about leader election.
type Leadership struct {
	// Leader is 1 while this replica publishes.
	Leader prometheus.Gauge
	// Transitions counts the times this replica started or stopped
	// leading.
	Transitions prometheus.Counter
}

// Leadership registers the leader election metrics.
func (m *Metrics) Leadership() Leadership {
	l := Leadership{
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "leader",
			Help: "1 while this replica publishes (it holds the Lease, or leader election is off), 0 for a standby."}),
		Transitions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "leadership_transitions_total",
			Help: "Times this replica started or stopped leading."}),
	}
	m.Registry.MustRegister(l.Leader, l.Transitions)
	return l
}

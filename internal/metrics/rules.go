package metrics

import "github.com/prometheus/client_golang/prometheus"

// Rules is what the bridge reports about the types' publishing rules.
type Rules struct {
	// Errors counts evaluations of a rule (match, when) that failed or ran
	// over their cost limit; the change was published as if it were true.
	Errors *prometheus.CounterVec
	// OutOfScope counts changes of objects outside match, before and after:
	// never published.
	OutOfScope *prometheus.CounterVec
	// Withheld counts updates not published on their own, by reason (when:
	// the rule was false; unchanged: only ignored fields changed). Each
	// merges into its object's next published change, and is then counted
	// in kubebridge_changes_coalesced_total too, or is superseded by a
	// snapshot item.
	Withheld *prometheus.CounterVec
}

// Rules registers the rules' metrics, with the series of every type in
// resources at zero.
func (m *Metrics) Rules(resources []string) Rules {
	r := Rules{
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "rule_errors_total",
			Help: "Evaluations of a type's match or when expression that failed or ran over the cost limit; the change was published as if the expression were true."}, []string{"resource", "rule"}),
		OutOfScope: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_out_of_scope_total",
			Help: "Changes of objects outside their type's match expression, before and after the change: not published."}, []string{"resource"}),
		Withheld: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "changes_withheld_total",
			Help: "Updates not published on their own, by reason: when (the type's when expression was false) or unchanged (only ignored fields and the resourceVersion changed). Each merges into its object's next published change (and is counted in kubebridge_changes_coalesced_total then) or is superseded by a snapshot item."}, []string{"resource", "reason"}),
	}
	m.Registry.MustRegister(r.Errors, r.OutOfScope, r.Withheld)
	for _, res := range resources {
		r.Errors.WithLabelValues(res, "match")
		r.Errors.WithLabelValues(res, "when")
		r.OutOfScope.WithLabelValues(res)
		r.Withheld.WithLabelValues(res, "when")
		r.Withheld.WithLabelValues(res, "unchanged")
	}
	return r
}

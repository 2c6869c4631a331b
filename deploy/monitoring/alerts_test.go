package monitoring

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// timeScale shortens every duration of the rules (range windows, for:) by
// this factor, so that runs of a minute or two go through what takes half
// an hour in a cluster. Thresholds (a lag of 30s, say) stay real.
const timeScale = 15

// mustFire are the alerts the faulty run must fire.
var mustFire = []string{"KubebridgeJetStreamUnavailable", "KubebridgeTypeNotReady", "KubebridgeLagHigh"}

// TestAlertsAgainstRealRuns runs the bridge twice on the real apiserver
// and NATS, scraping its /metrics every second as Prometheus would:
//   - healthy: ConfigMaps change; no alert may fire;
//   - faulty: a type the bridge may not list (secrets, without RBAC) and
//     a 40s NATS outage while ConfigMaps change: KubebridgeTypeNotReady,
//     KubebridgeJetStreamUnavailable (during the outage) and
//     KubebridgeLagHigh (the changes of the outage arrive 40s late) must
//     fire.
//
// The rules are evaluated with Prometheus's rule and PromQL engines over
// the scraped samples, their durations divided by timeScale. And every
// series the rules and the dashboard name exists on the bridge's /metrics,
// with every label they use.
func TestAlertsAgainstRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of the bridge, one with a 40s NATS outage")
	}
	env := testenv.Get(t)
	s := render(t)
	alerts := alertingRules(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	ns := newNamespace(ctx, t, env)
	churn := startChurn(ctx, t, env, ns)

	// The runs' phases are the behaviour under test, their lengths the
	// time the scaled rules need: these sleeps wait for no condition.
	healthy := startRun(t, env, "healthy", map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_NAMESPACES": ns})
	time.Sleep(45 * time.Second) // long enough for any rule to fire
	healthy.stopRun()
	if fired := evaluate(t, healthy, alerts); len(fired) > 0 {
		t.Errorf("in the healthy run, alerts fired: %v", fired)
	}

	kubeconfig := limitedKubeconfig(ctx, t, env, ns)
	faulty := startRun(t, env, "faulty", map[string]string{"BRIDGE_RESOURCES": "configmaps; secrets", "BRIDGE_NAMESPACES": ns, "KUBECONFIG": kubeconfig})
	time.Sleep(10 * time.Second) // secrets stay forbidden, NATS up
	env.StopNATS()
	time.Sleep(40 * time.Second) // the outage: the changes meanwhile arrive 40s late
	if err := env.StartNATS(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Second) // the late changes arrive; the lag shows
	faulty.stopRun()
	churn()
	fired := evaluate(t, faulty, alerts)
	for _, name := range mustFire {
		if !slices.Contains(fired, name) {
			t.Errorf("in the faulty run, %s did not fire (fired: %v)", name, fired)
		}
	}
	t.Logf("the faulty run fired %v", fired)

	checkSeries(t, faulty, s, alerts)
}

// alertingRules are the PrometheusRule's alerts, their durations divided
// by timeScale.
func alertingRules(t *testing.T, s shipped) []*rules.AlertingRule {
	t.Helper()
	var out []*rules.AlertingRule
	p := parser.NewParser(parser.Options{})
	for _, g := range groups(t, s.rule).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			scale(expr)
			out = append(out, rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For)/timeScale, time.Duration(r.KeepFiringFor)/timeScale,
				labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, slog.New(slog.DiscardHandler)))
		}
	}
	return out
}

// scale divides every range of expr by timeScale.
func scale(expr parser.Expr) {
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.MatrixSelector:
			n.Range /= timeScale
		case *parser.SubqueryExpr:
			n.Range /= timeScale
			n.Step /= timeScale
		}
		return nil
	})
}

// evaluate runs every alert over the run's samples, every second from its
// start to its end, as Prometheus's rule manager would, and returns the
// alerts that fired at some point.
func evaluate(t *testing.T, r *run, alerts []*rules.AlertingRule) []string {
	t.Helper()
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: time.Minute})
	query := rules.EngineQueryFunc(engine, r.store)
	var fired []string
	for _, a := range alerts {
		for ts := r.start; ts.Before(r.end); ts = ts.Add(time.Second) {
			if _, err := a.Eval(context.Background(), 0, ts, query, nil, 0); err != nil {
				t.Fatalf("%s at %v: %v", a.Name(), ts, err)
			}
			// What the rule manager records after each evaluation.
			a.SetEvaluationTimestamp(ts)
			if a.State() == rules.StateFiring {
				fired = append(fired, a.Name())
				t.Logf("%s: %s fires %v after the start", r.name, a.Name(), ts.Sub(r.start).Round(time.Second))
				break
			}
		}
	}
	return fired
}

// checkSeries: every series the alerts and the dashboard select exists on
// the run's last scrape, and every label they match, group or join on is
// on it (or is one the scrape adds).
func checkSeries(t *testing.T, r *run, s shipped, alerts []*rules.AlertingRule) {
	t.Helper()
	fams := r.families()
	scrapeLabels := []string{"namespace", "job", "pod", "instance", "service", "endpoint", "container"}
	exprs := map[string]string{}
	for _, a := range alerts {
		exprs["alert "+a.Name()] = a.Query().String()
	}
	for i, e := range dashboardExprs(t, s) {
		exprs[fmt.Sprintf("dashboard query %d", i+1)] = e
	}
	checked := map[string]bool{}
	for where, e := range exprs {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(e)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		// A selector's matchers name labels of its own series; a grouping
		// (by) or a join (on) names labels of at least one of the series
		// under it.
		has := func(name, l string) bool {
			fs := fams[name]
			return fs != nil && (fs.labels[l] || slices.Contains(scrapeLabels, l) || (l == "le" && strings.HasSuffix(name, "_bucket")))
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			var need []string
			switch n := n.(type) {
			case *parser.VectorSelector:
				name := n.Name
				checked[name] = true
				if fams[name] == nil {
					t.Errorf("%s selects %s, which the bridge's /metrics does not have", where, name)
					return nil
				}
				for _, m := range n.LabelMatchers {
					if m.Name != model.MetricNameLabel && !has(name, m.Name) {
						t.Errorf("%s matches the label %s, which %s does not have (it has %v)", where, m.Name, name, sortedKeys(fams[name].labels))
					}
				}
				return nil
			case *parser.AggregateExpr:
				need = n.Grouping
			case *parser.BinaryExpr:
				if n.VectorMatching != nil {
					need = n.VectorMatching.MatchingLabels
				}
			}
			if len(need) == 0 {
				return nil
			}
			var under []string
			parser.Inspect(n, func(c parser.Node, _ []parser.Node) error {
				if vs, ok := c.(*parser.VectorSelector); ok {
					under = append(under, vs.Name)
				}
				return nil
			})
			for _, l := range need {
				if !slices.ContainsFunc(under, func(name string) bool { return has(name, l) }) {
					t.Errorf("%s groups or joins on %s, which none of %v has", where, l, under)
				}
			}
			return nil
		})
	}
	t.Logf("%d queries select %d series of the bridge's /metrics: %v", len(exprs), len(checked), sortedKeys(checked))
}

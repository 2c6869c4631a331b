package monitoring

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubebridge/kubebridge/internal/manifests"
)

// shipped is what the component renders, with the base, decoded strictly.
type shipped struct {
	serviceMonitor *monitoringv1.ServiceMonitor
	rule           *monitoringv1.PrometheusRule
	dashboard      *corev1.ConfigMap
	metricsService *corev1.Service
}

func render(t *testing.T) shipped {
	t.Helper()
	built, err := manifests.Build("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var s shipped
	for _, data := range built.Objects {
		var meta struct{ Kind string }
		if err := json.Unmarshal(data, &meta); err != nil {
			t.Fatal(err)
		}
		strict := func(into any) {
			t.Helper()
			if err := yaml.UnmarshalStrict(data, into); err != nil {
				t.Fatalf("%s does not decode strictly: %v", meta.Kind, err)
			}
		}
		switch meta.Kind {
		case "ServiceMonitor":
			s.serviceMonitor = &monitoringv1.ServiceMonitor{}
			strict(s.serviceMonitor)
		case "PrometheusRule":
			s.rule = &monitoringv1.PrometheusRule{}
			strict(s.rule)
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if strict(cm); cm.Labels["grafana_dashboard"] != "" {
				s.dashboard = cm
			}
		case "Service":
			svc := &corev1.Service{}
			if strict(svc); svc.Name == "kubebridge-metrics" {
				s.metricsService = svc
			}
		}
	}
	if s.serviceMonitor == nil || s.rule == nil || s.dashboard == nil || s.metricsService == nil {
		t.Fatalf("the component renders ServiceMonitor %v, PrometheusRule %v, dashboard %v (with the base's Service %v)",
			s.serviceMonitor != nil, s.rule != nil, s.dashboard != nil, s.metricsService != nil)
	}
	return s
}

// groups parses the PrometheusRule's groups as Prometheus parses a rule
// file.
func groups(t *testing.T, rule *monitoringv1.PrometheusRule) *rulefmt.RuleGroups {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	rgs, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	if len(errs) > 0 {
		t.Fatalf("the PrometheusRule does not parse as Prometheus rules: %v", errs)
	}
	return rgs
}

// TestComponent: the ServiceMonitor scrapes the base's metrics Service on
// its port; the rules parse as Prometheus rules, each alert with a
// severity and a runbook that docs/operations.md has; the dashboard is a
// ConfigMap the Grafana sidecar finds, and every query of it parses.
func TestComponent(t *testing.T) {
	s := render(t)
	sm := s.serviceMonitor
	for k, v := range sm.Spec.Selector.MatchLabels {
		if s.metricsService.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s; the Service kubebridge-metrics has %v", k, v, s.metricsService.Labels)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || !slices.ContainsFunc(s.metricsService.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == sm.Spec.Endpoints[0].Port }) ||
		sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v: want /metrics on a port of the Service", sm.Spec.Endpoints)
	}

	runbook, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(runbook), -1) {
		anchors[strings.ToLower(strings.ReplaceAll(strings.TrimSpace(m[1]), " ", "-"))] = true
	}
	var alerts int
	for _, g := range groups(t, s.rule).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			url := r.Annotations["runbook_url"]
			anchor := url[strings.LastIndex(url, "#")+1:]
			if !strings.Contains(url, "docs/operations.md#") || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q: docs/operations.md has no section %q", r.Alert, url, anchor)
			}
			if sev := r.Labels["severity"]; sev != "critical" && sev != "warning" {
				t.Errorf("%s: severity %q", r.Alert, sev)
			}
		}
	}
	t.Logf("%d alerts, each with its runbook", alerts)

	for _, e := range dashboardExprs(t, s) {
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(e); err != nil {
			t.Errorf("dashboard query %q: %v", e, err)
		}
	}
}

// dashboardExprs are the dashboard's queries, with its variables filled in.
func dashboardExprs(t *testing.T, s shipped) []string {
	t.Helper()
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(s.dashboard.Data["kubebridge.json"]), &dash); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, strings.ReplaceAll(tg.Expr, "$namespace", targetNamespace))
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

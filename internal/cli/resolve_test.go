package cli

import (
	"strings"
	"testing"
)

func TestResolveIn(t *testing.T) {
	types := []streamType{
		{Resource: "configmaps", Version: "v1"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
		{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		{Group: "example.com", Version: "v1", Resource: "widgets"},
		{Group: "other.io", Version: "v1", Resource: "widgets"},
		{Resource: "events", Version: "v1"},
		{Group: "events.k8s.io", Version: "v1", Resource: "events"},
	}
	for word, want := range map[string]string{
		"configmaps": "configmaps", "cm": "configmaps", "ConfigMap": "configmaps", "configmap": "configmaps", "configmaps.v1": "configmaps.v1",
		"deploy": "deployments.apps", "deployments": "deployments.apps", "Deployment": "deployments.apps", "deployments.apps": "deployments.apps",
		"hpa": "horizontalpodautoscalers.v2.autoscaling", "hpa.v1.autoscaling": "horizontalpodautoscalers.v1.autoscaling",
		"widgets.example.com": "widgets.example.com", "widget.example.com": "widgets.example.com",
		"events": "events", "events.events.k8s.io": "events.events.k8s.io",
		// Not in the stream: the built-in's name, or the word.
		"statefulsets": "statefulsets.apps", "sts": "statefulsets.apps", "gizmos": "gizmos",
	} {
		r, err := resolveIn(types, word)
		if err != nil || r.filter() != want {
			t.Errorf("%q: %q %v, want %q", word, r.filter(), err, want)
		}
	}
	if _, err := resolveIn(types, "widgets"); err == nil || !strings.Contains(err.Error(), "widgets.example.com and widgets.other.io") {
		t.Errorf("widgets in two groups: %v", err)
	}
}

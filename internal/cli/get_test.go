package cli_test

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestGetPrintsWhatKubectlPrints runs the bridge on ConfigMaps, Secrets,
// Deployments and Pods of two namespaces and compares get's tables with
// the apiserver's own Table for the same objects (the one kubectl get
// prints): default, -A, -o wide, --show-labels, -l, short names.
func TestGetPrintsWhatKubectlPrints(t *testing.T) {
	h := newHarness(t)
	ns1, ns2 := h.namespace(), h.namespace()
	h.fixtures(ns1, ns2)
	h.runBridge("configmaps; secrets; deployments.apps; pods", ns1, ns2)

	core, apps := h.cs.CoreV1().RESTClient(), h.cs.AppsV1().RESTClient()
	both := []string{ns1, ns2}
	for _, c := range []struct {
		rc       rest.Interface
		path     string
		resource string
		typed    string
	}{
		{core, "/api/v1", "configmaps", "cm"},
		{core, "/api/v1", "secrets", "secret"},
		{apps, "/apis/apps/v1", "deployments", "deploy"},
		{core, "/api/v1", "pods", "po"},
	} {
		t.Run(c.resource, func(t *testing.T) {
			h := *h
			h.t = t
			h.checkGet(h.apiTable(c.rc, c.path, c.resource, []string{ns1}, false, false), "get", c.resource, "-n", ns1)
			h.checkGet(h.apiTable(c.rc, c.path, c.resource, both, false, true), "get", c.typed, "-A")
			h.checkGet(h.apiTable(c.rc, c.path, c.resource, []string{ns1}, true, false), "get", c.resource, "--namespace="+ns1, "-o", "wide")
			h.checkGet(h.apiTable(c.rc, c.path, c.resource, both, true, true), "get", c.resource, "-owide", "--all-namespaces")
		})
	}

	// --show-labels adds kubectl's LABELS column; -l selects by label.
	res := h.run("get", "configmaps", "-n", ns1, "--show-labels", "-l", "app")
	got := parseTable(t, res.stdout)
	want := table{header: []string{"NAME", "DATA", "AGE", "LABELS"}, rows: [][]string{{"app-config", "4", "", "app=web"}, {"zz-last", "1", "", "app=api,tier=back"}}}
	for i := range got.rows {
		got.rows[i][2] = ""
	}
	if res.code != 0 || got.String() != want.String() {
		t.Errorf("get --show-labels -l app: got\n%s\nwant\n%s\n%s", got, want, res)
	}
}

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// TestJSConsumerClusters runs examples/js/consume.mjs over a stream that
// two clusters write (two bridges, BRIDGE_CLUSTER_NAME a and b, watching
// the same namespace), reading both with * as the cluster: the term rule
// applies per cluster, so cluster a's events, written in a lower term than
// cluster b's, are all applied; each cluster's objects are the
// apiserver's; live changes of both clusters arrive; and an event with a
// term no marker backs is reported as foreign, not applied.
func TestJSConsumerClusters(t *testing.T) {
	node, npm := jsTools(t)
	env := testenv.Get(t)
	h := newHarness(t)
	dir := jsInstall(t, npm)
	for i := range 4 {
		h.createCM(h.ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"k": "v"})
	}
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "0"}
	for _, c := range []string{"a", "b"} {
		vars["BRIDGE_CLUSTER_NAME"] = c
		h.startBridge(vars)
	}
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})

	js := jsStart(t, node, dir, h.prefix+".*.core.v1.configmaps", env.NATSURL(), h.stream)
	synced := js.waitLine(t, "the state and the synced line", regexp.MustCompile(`^synced \d+ objects$`))
	got := map[string]map[string]string{"a": {}, "b": {}}
	for _, l := range js.lines()[:synced] {
		if strings.HasPrefix(l, "fenced ") || strings.HasPrefix(l, "foreign ") {
			t.Errorf("the JS consumer skipped a message of a live bridge: %q", l)
		}
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "state" {
			continue
		}
		c, obj, _ := strings.Cut(f[1], ":")
		ns, name, _ := strings.Cut(obj, "/")
		if got[c] == nil {
			t.Fatalf("state line of cluster %q: %q", c, l)
		}
		got[c][h.cmSubject(ns, name)] = strings.TrimPrefix(f[2], "rv=")
	}
	for c, state := range got {
		if d := diffState(state, want); d != "" {
			t.Errorf("cluster %s, as the JS consumer rebuilt it from the shared stream, differs from the apiserver: %s\n%s", c, d, js.output())
		}
	}

	cm := h.touchCM(h.ns, "cm-1")
	for _, c := range []string{"a", "b"} {
		js.waitEvent(t, "updated", c+":"+h.ns+"/cm-1", cm.ResourceVersion, 2*len(want))
	}
	h.cluster = "a"
	h.forgeEvent(h.cmSubject(h.ns, "cm-2"))
	obj := regexp.QuoteMeta("a:" + h.ns + "/cm-2")
	i := js.waitLine(t, "a line about the forged event", regexp.MustCompile(`^((foreign|fenced) \S+|added|updated|deleted|item) `+obj+` `))
	if l := js.lines()[i]; !strings.HasPrefix(l, "foreign ") {
		t.Errorf("the JS consumer did not report the event of term 99999999 as foreign: %q", l)
	}
	t.Logf("JS consumer output:\n%s", js.output())
}

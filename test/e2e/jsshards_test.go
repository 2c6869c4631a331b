package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestJSConsumerShards runs examples/js/consume.mjs over a stream of two
// shards, each started twice in turn, so that shard 0's current term is
// lower than shard 1's: a term rule over the whole cluster would ignore
// every later event of shard 0. A message of shard 0's first (deposed)
// term is stored after its second began: the consumer must ignore that
// one. Its state, rebuilt from the last message per subject, equals the
// apiserver's list.
func TestJSConsumerShards(t *testing.T) {
	node, npm := jsTools(t)
	env := testenv.Get(t)
	h := newHarness(t)
	typ := h.cmType()
	dir := jsInstall(t, npm)

	// Namespaces of both shards.
	nss := []string{h.ns}
	byShard := map[int]string{shardOfNamespace(h.ns, 2): h.ns}
	for len(nss) < 4 || len(byShard) < 2 {
		ns := h.newNamespace()
		nss = append(nss, ns)
		if _, ok := byShard[shardOfNamespace(ns, 2)]; !ok {
			byShard[shardOfNamespace(ns, 2)] = ns
		}
	}
	for _, ns := range nss {
		for i := range 2 {
			h.createCM(ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"k": "v"})
		}
	}
	vars := func(i int) map[string]string {
		return map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_NAMESPACES": strings.Join(nss, ","), "BRIDGE_RESYNC_PERIOD": "0",
			"BRIDGE_SHARDS": "2", "BRIDGE_SHARD": strconv.Itoa(i), "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "", "BRIDGE_TOMBSTONE_TTL": ""}
	}
	// Shard 0, shard 1, shard 0 again, shard 1 again: shard 0's first
	// term is deposed, and its current one is lower than shard 1's.
	s0 := h.startBridge(vars(0))
	s1 := h.startBridge(vars(1))
	s0.stop()
	h.startBridge(vars(0))
	s1.stop()
	h.startBridge(vars(1))
	terms0 := h.jsTermsOn(h.subjects().OfShard(contract.Shard{Index: 0, Count: 2}).Term())
	if len(terms0) != 2 {
		t.Fatalf("shard 0's term markers at %v, want one per start (2)", terms0)
	}
	// Shard 0's events after shard 1's newer term marker: a term rule over
	// the whole cluster would ignore them.
	ns0 := byShard[0]
	cm := h.createCM(ns0, "after-shard-1", nil, map[string]string{"k": "v"})
	cm.Data["k"] = "v2"
	h.updateCM(cm)
	h.deleteCM(ns0, "cm-0")
	want := map[string]string{}
	for _, ns := range nss {
		for subj, rv := range h.listConfigMaps(ns, metav1.ListOptions{}) {
			want[subj] = rv
		}
	}
	h.waitLastPerSubject(typ, want)
	h.jsPublishLateIn(ns0, "late-boot", terms0[0], "0/2")

	js := jsStart(t, node, dir, typ, env.NATSURL(), h.stream)
	synced := js.waitLine(t, "the state and the synced line", regexp.MustCompile(`^synced \d+ objects$`))
	got := js.state(h, synced)
	if d := diffState(got, want); d != "" {
		t.Fatalf("the JS consumer's state differs from the apiserver's list: %s\n%s", d, js.output())
	}
	if !slices.ContainsFunc(js.lines()[:synced], lateLineRE(ns0+"/late-boot", "fenced").MatchString) {
		t.Errorf("the JS consumer did not fence the late message of shard 0's first term\n%s", js.output())
	}
	t.Logf("JS consumer synced %d objects of %d namespaces over two shards, as the apiserver lists", len(got), len(nss))
}

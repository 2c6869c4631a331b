package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// lastView is the stream as a consumer bootstrapping from the last message
// per subject sees it: subject → resourceVersion of objects whose last
// message is not a delete. It is computed from a full replay, independently
// of the bridge's own reading.
func lastView(t *testing.T, js jetstream.JetStream) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := replay.ReadAll(ctx, js, "KUBEBRIDGE", "")
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]replay.Message{}
	for _, m := range msgs {
		last[m.Subject] = m
	}
	out := map[string]string{}
	for subj, m := range last {
		switch m.Event.Type() {
		case contract.TypeSnapshotBegin, contract.TypeSnapshotEnd, contract.TypeDeleted, contract.TypeTerm:
			continue
		}
		out[subj] = fmt.Sprint(m.Event.Extensions()[contract.ExtResourceVersion])
	}
	return out
}

// TestRestartPublishesMissedDeletes: objects deleted (or deleted and
// created again) while the bridge was down are published as deleted with
// finalstateunknown at the next start, so the last message per subject
// equals the cluster; objects outside the configured scope are left alone.
func TestRestartPublishesMissedDeletes(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	for i := range 10 {
		cluster.create(t, cluster.configMap("ns0", fmt.Sprintf("cm-%d", i), map[string]string{"i": "0"}))
	}
	labelled := cluster.configMap("ns0", "labelled", nil)
	labelled.Labels = map[string]string{"team": "a"}
	cluster.create(t, labelled)
	other := cluster.create(t, cluster.configMap("ns1", "other-ns", nil))
	teamB := cluster.configMap("ns0", "team-b", nil)
	teamB.Labels = map[string]string{"team": "b"}
	teamB = cluster.create(t, teamB)

	first := startBridge(t, testConfig(t, map[string]string{"BRIDGE_STREAM_STORAGE": "file"}), cluster.kube(), nc)
	waitFor(t, js, "the first start-up snapshot", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) == 1 })
	first.stop(t)

	// While no bridge runs: two deletes, one delete and re-create under a
	// new uid, and objects that leave the next run's scope.
	cluster.delete(t, "ns0", "cm-1")
	cluster.delete(t, "ns0", "cm-2")
	cluster.delete(t, "ns0", "cm-3")
	cluster.create(t, cluster.configMap("ns0", "cm-3", map[string]string{"i": "new"}))
	cluster.delete(t, "ns0", "labelled")
	cluster.delete(t, "ns1", "other-ns")
	cluster.delete(t, "ns0", "team-b")

	// The next run watches only ns0 and only objects without team=b: the
	// deleted ns1 object is outside its scope and stays as it was.
	startBridge(t, testConfig(t, map[string]string{"BRIDGE_STREAM_STORAGE": "file", "BRIDGE_RESOURCES": "cm | namespaces=ns0 | labels=team!=b"}), cluster.kube(), nc)
	msgs := waitFor(t, js, "the second start-up snapshot", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) == 2 })

	var deletes []string
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeDeleted {
			if m.Ext(contract.ExtFinalStateUnknown) == "" && m.Event.Extensions()[contract.ExtFinalStateUnknown] != true {
				t.Errorf("delete of %s without finalstateunknown", m.Subject)
			}
			deletes = append(deletes, m.Subject)
		}
	}
	want := map[string]bool{}
	for _, name := range []string{"cm-1", "cm-2", "cm-3", "labelled"} {
		want[testSubjects.Object(configMaps.Type(), "ns0", name)] = true
	}
	if len(deletes) != len(want) {
		t.Errorf("deletes published for %v, want %d: cm-1, cm-2, cm-3 (old uid), labelled", deletes, len(want))
	}
	for _, d := range deletes {
		if !want[d] {
			t.Errorf("unexpected delete of %s", d)
		}
	}

	view := lastView(t, js)
	cl := cluster.state(t, testSubjects)
	// The ns1 object and the team=b one are outside the scope: the stream
	// keeps what it last said about them.
	cl[testSubjects.Object(configMaps.Type(), "ns1", "other-ns")] = other.ResourceVersion
	cl[testSubjects.Object(configMaps.Type(), "ns0", "team-b")] = teamB.ResourceVersion
	assertRVs(t, "the last-per-subject view", view, cl)
}

package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/sink"
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

// TestRestartPublishesDeletesADeposedTermStored: a delete that a deposed
// leader stored after a newer term's marker is one consumers ignore (the
// term rule), so it does not make the object deleted. The next leader's
// scan must publish the delete again, or consumers hold the object for
// good (robustness seed 392032: the first leader thawed after its
// successor's marker and stored deletes on subjects the successor had not
// written yet; the successor was killed in its snapshot, and the third
// leader's scan took the deposed deletes for done).
func TestRestartPublishesDeletesADeposedTermStored(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	for _, name := range []string{"gone", "kept"} {
		cluster.create(t, cluster.configMap("ns0", name, nil))
	}
	cfg := testConfig(t, map[string]string{"BRIDGE_STREAM_STORAGE": "file"})
	first := startBridge(t, cfg, cluster.kube(), nc)
	msgs := waitFor(t, js, "the first start-up snapshot", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) == 1 })
	first.stop(t)

	// A successor stores its term marker and dies before it writes
	// anything else; then the deposed first leader stores its delete of
	// "gone", conditional on the subject's last sequence, as a thawed
	// leader's publish is.
	subject := testSubjects.Object(configMaps.Type(), "ns0", "gone")
	var marker, item replay.Message
	for _, m := range msgs {
		switch {
		case m.Event.Type() == contract.TypeTerm:
			marker = m
		case m.Subject == subject:
			item = m
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	successor := republish(t, ctx, js, marker, "successor-term", contract.TypeTerm, 0)
	cluster.delete(t, "ns0", "gone")
	deposed := republish(t, ctx, js, item, "deposed-delete", contract.TypeDeleted, item.Seq)

	startBridge(t, cfg, cluster.kube(), nc)
	msgs = waitFor(t, js, "the third term's start-up snapshot", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) == 2 })
	var redeleted bool
	for _, m := range msgs {
		redeleted = redeleted || (m.Seq > deposed && m.Subject == subject && m.Event.Type() == contract.TypeDeleted)
	}
	if !redeleted {
		t.Errorf("no delete of %s after the deposed one (seq %d, stored after the marker at %d)", subject, deposed, successor)
	}
	// A consumer that applies the term rule: the object is gone by an
	// event, not by the snapshot's sweep.
	state := replay.NewState(testSubjects)
	for _, m := range msgs {
		if err := state.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	if o, ok := state.Objects[subject]; ok || len(state.Swept) > 0 {
		t.Errorf("a consumer applying the term rule holds %s (rv %s) until a snapshot sweeps it (swept %v)", subject, o.ResourceVersion, state.Swept)
	}
	if _, ok := state.Objects[testSubjects.Object(configMaps.Type(), "ns0", "kept")]; !ok {
		t.Error("the object the cluster still has is gone from the consumer's state")
	}
}

// republish stores a copy of m under a new id and type, on its subject
// (conditional on the subject's last sequence expect, unless 0), and
// returns its stream sequence.
func republish(t *testing.T, ctx context.Context, js jetstream.JetStream, m replay.Message, id, typ string, expect uint64) uint64 {
	t.Helper()
	msg := nats.NewMsg(m.Subject)
	for k, v := range m.Header {
		msg.Header[k] = v
	}
	msg.Header.Set(contract.HeaderType, typ)
	msg.Header.Set(contract.Header("id"), id)
	msg.Header.Set(nats.MsgIdHdr, id)
	// The original's condition is stored with it.
	msg.Header.Del(sink.HeaderExpectedLastSubjectSequence)
	var opts []jetstream.PublishOpt
	if expect != 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expect))
	}
	msg.Data = m.Data
	ack, err := js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		t.Fatalf("store %s on %s: %v", id, m.Subject, err)
	}
	return ack.Sequence
}

// The term rule for the last message per subject, as contract §3 words
// it: a message m is a deposed leader's when a term marker T of its
// cluster and shard exists with m.term < T < m.seq.
func TestTermMarkersDeposed(t *testing.T) {
	sharded := contract.Shard{Index: 1, Count: 2}
	markers := termMarkers{{}: termsAt(1, 6, 20), sharded: termsAt(3)}
	for _, tc := range []struct {
		name  string
		term  string
		shard string
		seq   uint64
		want  bool
	}{
		{"its own term's latest message", "20", "", 25, false},
		{"stored before the next term began", "1", "", 5, false},
		{"stored after the next term's marker", "1", "", 7, true},
		{"stored after two newer terms", "1", "", 30, true},
		{"a middle term's, after the last marker", "6", "", 21, true},
		{"from before terms, after a marker", "0", "", 2, true},
		{"another shard's terms do not depose it", "3", "1/2", 7, false},
		{"its own shard's term does", "1", "1/2", 4, true},
		{"no term extension: from before terms, after a marker", "", "", 30, true},
		{"a term that is no number: foreign, for the fence to judge", "x", "", 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nats.Header{}
			if tc.term != "" {
				h.Set(contract.TermHeader, tc.term)
			}
			if tc.shard != "" {
				h.Set(contract.Header(contract.ExtShard), tc.shard)
			}
			if got := markers.deposed(tc.seq, h); got != tc.want {
				t.Errorf("deposed(seq %d, term %q, shard %q) = %v, want %v", tc.seq, tc.term, tc.shard, got, tc.want)
			}
		})
	}
}

// termsAt are term markers stored at seqs.
func termsAt(seqs ...uint64) contract.Terms {
	var ts contract.Terms
	for _, seq := range seqs {
		ts.Add(seq)
	}
	return ts
}

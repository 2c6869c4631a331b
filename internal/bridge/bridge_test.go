package bridge

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

func TestServePublishesExactSequence(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	pre := cluster.configMap("default", "pre", map[string]string{"k": "v0"})
	cluster.create(t, pre)

	// Deletes that do not expire, so without a roll-up: the exact sequence
	// of every message (TestTombstoneHeaders covers the roll-up).
	startBridge(t, testConfig(t, map[string]string{"BRIDGE_TOMBSTONE_TTL": "0"}), cluster.kube(), nc)
	b := cluster.create(t, cluster.configMap("default", "b", map[string]string{"k": "v1"}))
	waitFor(t, js, "added b", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeAdded) == 1 })
	b2 := b.DeepCopy()
	b2.Data["k"] = "v2"
	b2 = cluster.update(t, b2)
	waitFor(t, js, "updated b", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeUpdated) == 1 })
	cluster.delete(t, "default", "pre")
	msgs := waitFor(t, js, "deleted pre", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeDeleted) == 1 })

	preSubj := "kubebridge.test.core.v1.configmaps.default.pre"
	bSubj := "kubebridge.test.core.v1.configmaps.default.b"
	want := []struct{ typ, subject, id string }{
		{contract.TypeTerm, "kubebridge.test._term", "term/"},
		{contract.TypeSnapshotBegin, "kubebridge.test.core.v1.configmaps._snapshot.begin", ""},
		{contract.TypeSnapshotItem, preSubj, "configmaps.v1/" + string(pre.UID) + "/" + pre.ResourceVersion + "/snapshot.item/"},
		{contract.TypeSnapshotEnd, "kubebridge.test.core.v1.configmaps._snapshot.end", ""},
		{contract.TypeAdded, bSubj, "configmaps.v1/" + string(b.UID) + "/" + b.ResourceVersion + "/added"},
		{contract.TypeUpdated, bSubj, "configmaps.v1/" + string(b.UID) + "/" + b2.ResourceVersion + "/updated"},
		{contract.TypeDeleted, preSubj, "configmaps.v1/" + string(pre.UID) + "/" + pre.ResourceVersion + "/deleted"},
	}
	if len(msgs) != len(want) {
		for _, m := range msgs {
			t.Logf("got %s %s %s", m.Event.Type(), m.Subject, m.Event.ID())
		}
		t.Fatalf("got %d messages, want %d", len(msgs), len(want))
	}
	snapshotID := msgs[1].Ext(contract.ExtSnapshotID)
	if snapshotID == "" {
		t.Fatal("begin marker without snapshot id")
	}
	for i, w := range want {
		m := msgs[i]
		wantID := w.id
		switch w.typ {
		case contract.TypeSnapshotItem:
			wantID += snapshotID
		case contract.TypeSnapshotBegin, contract.TypeSnapshotEnd:
			wantID = "configmaps.v1/" + snapshotID + "/" + strings.TrimPrefix(w.typ, "io.kubebridge.")
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
			// The term follows: a new leader's copy of a change is never a
			// duplicate of a deposed one's.
			wantID += "/" + fmt.Sprint(msgs[0].Seq)
		case contract.TypeTerm:
			// term/<holder>/<start in ns>: unique per start.
			if strings.HasPrefix(m.Event.ID(), wantID) {
				wantID = m.Event.ID()
			}
		}
		// Every event after the term marker carries the marker's sequence.
		if wantTerm := fmt.Sprint(msgs[0].Seq); i > 0 && m.Ext(contract.ExtTerm) != wantTerm {
			t.Errorf("message %d: term %q, want %s (the term marker's sequence)", i, m.Ext(contract.ExtTerm), wantTerm)
		}
		if m.Event.Type() != w.typ || m.Subject != w.subject || m.Event.ID() != wantID {
			t.Errorf("message %d: got (%s, %s, %s), want (%s, %s, %s)", i, m.Event.Type(), m.Subject, m.Event.ID(), w.typ, w.subject, wantID)
		}
		if got := m.Header.Get("Nats-Msg-Id"); got != "test/"+m.Event.ID() {
			t.Errorf("message %d: Nats-Msg-Id %q, ce-id %q", i, got, m.Event.ID())
		}
		if err := m.Event.Validate(); err != nil {
			t.Errorf("message %d: invalid CloudEvent: %v", i, err)
		}
	}
	if got := msgs[3].Event.Extensions()[contract.ExtSnapshotCount]; fmt.Sprint(got) != "1" {
		t.Errorf("end marker snapshotcount = %v, want 1", got)
	}

	var upd contract.Data
	if err := json.Unmarshal(msgs[5].Data, &upd); err != nil {
		t.Fatal(err)
	}
	var obj, old corev1.ConfigMap
	if err := json.Unmarshal(upd.Object, &obj); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(upd.OldObject, &old); err != nil {
		t.Fatal(err)
	}
	if obj.Data["k"] != "v2" || old.Data["k"] != "v1" || obj.Kind != "ConfigMap" || obj.APIVersion != "v1" || old.ResourceVersion != b.ResourceVersion {
		t.Errorf("updated data: object %+v, oldObject %+v", obj, old)
	}
	if msgs[5].Header.Get("Content-Type") != "application/json" || msgs[5].Event.DataContentType() != "application/json" {
		t.Errorf("content type: header %q, event %q", msgs[5].Header.Get("Content-Type"), msgs[5].Event.DataContentType())
	}
}

// TestSnapshotInvariantsUnderChurn runs periodic snapshots while objects
// are created, updated and deleted, and replays the stream as a consumer.
func TestSnapshotInvariantsUnderChurn(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	for i := range 30 {
		cluster.create(t, cluster.configMap("ns"+fmt.Sprint(i%3), fmt.Sprintf("cm-%d", i), map[string]string{"i": "0"}))
	}
	// Every snapshot stays in the stream, so that they can be counted and
	// replayed from the first.
	startBridge(t, testConfig(t, map[string]string{"BRIDGE_RESYNC_PERIOD": "100ms", "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1"}), cluster.kube(), nc)

	churn(t, cluster, 2*time.Second, 60)

	// Two more completed snapshots after the last change: the state has
	// settled in the stream.
	ends := countType(waitFor(t, js, "any message", 10*time.Second, func([]replay.Message) bool { return true }), contract.TypeSnapshotEnd)
	msgs := waitFor(t, js, "two more snapshots", 20*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeSnapshotEnd) >= ends+2 })

	state := replay.NewState(testSubjects)
	for _, m := range msgs {
		if err := state.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d messages, %d snapshots, %d snapshot items", len(msgs), countType(msgs, contract.TypeSnapshotEnd), countType(msgs, contract.TypeSnapshotItem))
	if state.Snapshots["kubebridge.test.core.v1.configmaps"] < 5 {
		t.Errorf("only %d snapshots completed during churn", state.Snapshots["kubebridge.test.core.v1.configmaps"])
	}
	if len(state.Regressions) > 0 {
		t.Errorf("resourceVersion regressions:\n%s", strings.Join(state.Regressions, "\n"))
	}
	// Nothing was dropped, so a snapshot end may remove only objects whose
	// delete is in the stream too: a snapshot listed just after a delete
	// can end before the delete event is published.
	deleted := map[string]bool{}
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeDeleted {
			deleted[m.Subject] = true
		}
	}
	for _, sw := range state.Swept {
		if subj, _, _ := strings.Cut(sw, " "); !deleted[subj] {
			t.Errorf("%s swept although no change was lost and it has no deleted event", sw)
		}
	}
	assertState(t, state, cluster.state(t, testSubjects))
}

func assertState(t *testing.T, state *replay.State, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for subj, o := range state.Objects {
		got[subj] = o.ResourceVersion
	}
	assertRVs(t, "the stream's state", got, want)
}

// assertRVs checks that got, what the bridge wrote (subject →
// resourceVersion), is the cluster's want.
func assertRVs(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for subj, rv := range want {
		if got[subj] != rv {
			t.Errorf("%s: %s has rv %q, cluster %q", subj, what, got[subj], rv)
		}
	}
	for subj, rv := range got {
		if _, ok := want[subj]; !ok {
			t.Errorf("%s (rv %s) is in %s but not in the cluster", subj, rv, what)
		}
	}
}

// churn creates, updates and deletes configmaps over a fixed set of names
// for d, at most rate operations per second.
func churn(t *testing.T, cluster *fakeCluster, d time.Duration, names int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[string]*corev1.ConfigMap{}
	list, err := cluster.client.CoreV1().ConfigMaps("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		live[list.Items[i].Namespace+"/"+list.Items[i].Name] = &list.Items[i]
	}
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		name := fmt.Sprintf("churn-%d", rng.IntN(names))
		ns := "ns" + fmt.Sprint(rng.IntN(3))
		key := ns + "/" + name
		cm, ok := live[key]
		switch {
		case !ok:
			live[key] = cluster.create(t, cluster.configMap(ns, name, map[string]string{"i": "0"}))
		case rng.IntN(4) == 0:
			cluster.delete(t, ns, name)
			delete(live, key)
		default:
			cm = cm.DeepCopy()
			cm.Data["i"] = fmt.Sprint(i)
			live[key] = cluster.update(t, cm)
		}
		// The churn's pace, not a wait for anything.
		time.Sleep(time.Millisecond)
	}
}

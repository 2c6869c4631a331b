package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestTombstoneTTL runs the bridge with BRIDGE_TOMBSTONE_TTL=3s on the
// stream it creates (default per-subject limit). Objects are updated a
// few times, then some are deleted, and one name is created again after
// its delete. Each delete is published with Nats-TTL and Nats-Rollup
// (seen on a plain subscription, so no timing is involved) and, once its
// TTL ran out, its subject is empty: not the delete, nor the object's
// older messages, which would show it again to a consumer reading the
// last message per subject. The recreated name keeps its new object. The
// last-per-subject view, and a mark-and-sweep replay from the start,
// equal the apiserver's list.
func TestTombstoneTTL(t *testing.T) {
	const objects, deleted = 20, 6
	h := newHarness(t)
	typ := h.cmType()
	cms := h.createManyWith(objects, func(i int) string { return churnName("ttl-", i) }, 0)

	// Every message as published, with its headers.
	published := make(chan *nats.Msg, 10000)
	sub, err := h.nc.ChanSubscribe(typ+".>", published)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_TOMBSTONE_TTL": "3s", "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": ""})
	if info := h.streamInfo(); !info.Config.AllowMsgTTL || !info.Config.AllowRollup || info.Config.MaxMsgsPerSubject != defaultMaxMsgsPerSubject {
		t.Errorf("created stream: allow_msg_ttl %v, allow_rollup_hdrs %v, max_msgs_per_subject %d", info.Config.AllowMsgTTL, info.Config.AllowRollup, info.Config.MaxMsgsPerSubject)
	}

	// Three updates of every object to be deleted: its subject holds its
	// snapshot item and three updates before the delete.
	for i := range deleted {
		name := churnName("ttl-", i)
		for k := range 3 {
			cm := cms[name].DeepCopy()
			cm.Data["k"] = fmt.Sprint(k)
			cms[name] = h.updateCM(cm)
			h.waitEvent(h.cmSubject(h.ns, name), contract.TypeUpdated, cms[name].ResourceVersion)
		}
	}
	gone := map[string]string{} // subject → uid
	for i := range deleted {
		name := churnName("ttl-", i)
		h.deleteCM(h.ns, name)
		gone[h.cmSubject(h.ns, name)] = string(cms[name].UID)
	}
	// One name comes back as a new object once its delete is stored: the
	// delete's expiry must leave the new object's messages alone.
	again := churnName("ttl-", 0)
	againSubj := h.cmSubject(h.ns, again)
	h.waitEvent(againSubj, contract.TypeDeleted, "")
	recreated := h.createCM(h.ns, again, nil, map[string]string{"k": "again"})
	delete(gone, againSubj)

	// The deletes as published.
	seen := map[string]bool{}
	timeout := time.After(convergeTimeout)
	for len(seen) < deleted {
		select {
		case m := <-published:
			if m.Header.Get("ce-type") != contract.TypeDeleted {
				continue
			}
			seen[m.Subject] = true
			if got := m.Header.Get(contract.HeaderTTL); got != "3s" {
				t.Errorf("delete on %s: Nats-TTL %q, want 3s", m.Subject, got)
			}
			if got := m.Header.Get(contract.HeaderRollup); got != "sub" {
				t.Errorf("delete on %s: Nats-Rollup %q, want sub", m.Subject, got)
			}
		case <-timeout:
			t.Fatalf("%d of %d deletes published after %v", len(seen), deleted, convergeTimeout)
		}
	}
	// Wait until every delete expired: their subjects are empty.
	var left []string
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		left = left[:0]
		for subj := range gone {
			if m := h.lastMsg(subj); m != nil {
				left = append(left, fmt.Sprintf("%s: %s rv %s", subj, m.Header.Get("ce-type"), m.Header.Get("ce-"+contract.ExtResourceVersion)))
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("%d subjects of deleted objects still hold a message %v after their 3s TTL: %q", len(left), convergeTimeout, left)
	}
	counts := h.subjectCounts()
	for subj := range gone {
		if counts[subj] != 0 {
			t.Errorf("%s holds %d messages after its delete expired", subj, counts[subj])
		}
	}
	if m := h.lastMsg(againSubj); m == nil || m.Header.Get("ce-"+contract.ExtUID) != string(recreated.UID) {
		t.Errorf("the name created again after its delete: last message %v, want the new object (uid %s)", m, recreated.UID)
	}

	// Both bootstraps hold exactly the cluster's objects.
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	if len(want) != objects-deleted+1 {
		t.Fatalf("apiserver lists %d configmaps, want %d", len(want), objects-deleted+1)
	}
	msgs, err := h.lastPerSubject(typ + ".*.*")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffState(lastView(msgs), want); d != "" {
		t.Errorf("last-per-subject view: %s", d)
	}
	all, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	checkNoRegressions(t, st)
	for _, m := range all {
		if uid := m.Ext(contract.ExtUID); gone[m.Subject] == uid && uid != "" {
			t.Errorf("seq %d: a message of deleted object %s (uid %s) is still in the stream: %s", m.Seq, m.Subject, uid, m.Event.Type())
		}
	}
	b.waitNoneDropped(cmResource, convergeTimeout)
}

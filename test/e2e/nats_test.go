package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestOversizeObject publishes objects larger than the NATS max payload:
// they are stored with truncated=true and only their identifying metadata,
// the bridge logs them and keeps running.
func TestOversizeObject(t *testing.T) {
	const maxPayload = 8192
	env := testenv.Get(t)
	h := newHarness(t)
	orig := h.nc.MaxPayload()
	// Registered before the bridge starts, so it runs after the bridge is
	// stopped.
	t.Cleanup(func() {
		if err := env.RestartNATS(func(o *server.Options) { o.MaxPayload = int32(orig) }); err != nil {
			t.Errorf("restore the NATS max payload: %v", err)
		}
	})
	if err := env.RestartNATS(func(o *server.Options) { o.MaxPayload = maxPayload }); err != nil {
		t.Fatal(err)
	}
	big := map[string]string{"blob": strings.Repeat("0123456789", 2000)} // 20 KB
	bigBefore := h.createCM(h.ns, "big-before", nil, big)

	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps"})
	if b.countLog("maxPayload=8192") == 0 {
		t.Errorf("the bridge did not log the max payload of 8192")
	}
	bigCM := h.createCM(h.ns, "big", nil, big)
	// The update waits for the added event, so the two are not merged.
	h.waitEvent(h.cmSubject(h.ns, "big"), contract.TypeAdded, bigCM.ResourceVersion)
	big2 := bigCM.DeepCopy()
	big2.Data["more"] = "x"
	big2 = h.updateCM(big2)
	small := h.createCM(h.ns, "small", nil, map[string]string{"k": "v"})
	msgs := h.waitStream("the small configmap created last", 30*time.Second, func(m []replay.Message) string {
		if len(onSubject(m, h.cmSubject(h.ns, "small"))) == 0 {
			return "no event for small"
		}
		return ""
	})
	defer logOnFailure(t, msgs)

	type meta struct {
		Name, Namespace, UID, ResourceVersion string
	}
	check := func(what string, m replay.Message, keys []string, want map[string]meta) {
		t.Helper()
		checkEq(t, what+" truncated", m.Ext(contract.ExtTruncated), "true")
		if len(m.Data) > maxPayload {
			t.Errorf("%s: %d bytes of data", what, len(m.Data))
		}
		var d map[string]map[string]json.RawMessage
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatalf("%s: %v: %s", what, err, m.Data)
		}
		var got []string
		for k := range d {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("%s: data holds %v, want %v", what, got, keys)
		}
		for k, obj := range d {
			var fields []string
			for f := range obj {
				fields = append(fields, f)
			}
			slices.Sort(fields)
			if !slices.Equal(fields, []string{"apiVersion", "kind", "metadata"}) {
				t.Errorf("%s: %s has fields %v, want only apiVersion, kind, metadata", what, k, fields)
			}
			var md map[string]any
			_ = json.Unmarshal(obj["metadata"], &md)
			var mdKeys []string
			for f := range md {
				mdKeys = append(mdKeys, f)
			}
			slices.Sort(mdKeys)
			if !slices.Equal(mdKeys, []string{"name", "namespace", "resourceVersion", "uid"}) {
				t.Errorf("%s: %s.metadata has %v, want name, namespace, resourceVersion, uid", what, k, mdKeys)
			}
			checkEq(t, what+" "+k+".apiVersion", string(obj["apiVersion"]), `"v1"`)
			checkEq(t, what+" "+k+".kind", string(obj["kind"]), `"ConfigMap"`)
			w := want[k]
			checkEq(t, what+" "+k+".metadata.name", fmt.Sprint(md["name"]), w.Name)
			checkEq(t, what+" "+k+".metadata.uid", fmt.Sprint(md["uid"]), w.UID)
			checkEq(t, what+" "+k+".metadata.resourceVersion", fmt.Sprint(md["resourceVersion"]), w.ResourceVersion)
		}
	}
	one := func(typ, name string) replay.Message {
		t.Helper()
		got := ofType(onSubject(msgs, h.cmSubject(h.ns, name)), typ, "")
		if len(got) != 1 {
			t.Fatalf("%d %s events for %s, want 1:\n%s", len(got), typ, name, describe(msgs))
		}
		return got[0]
	}
	m := one(contract.TypeSnapshotItem, "big-before")
	check("big-before item", m, []string{"object"}, map[string]meta{"object": {"big-before", h.ns, string(bigBefore.UID), bigBefore.ResourceVersion}})
	m = one(contract.TypeAdded, "big")
	check("big added", m, []string{"object"}, map[string]meta{"object": {"big", h.ns, string(bigCM.UID), bigCM.ResourceVersion}})
	m = one(contract.TypeUpdated, "big")
	check("big updated", m, []string{"object", "oldObject"}, map[string]meta{
		"object":    {"big", h.ns, string(bigCM.UID), big2.ResourceVersion},
		"oldObject": {"big", h.ns, string(bigCM.UID), bigCM.ResourceVersion},
	})
	m = one(contract.TypeAdded, "small")
	if _, ok := m.Event.Extensions()[contract.ExtTruncated]; ok || !strings.Contains(string(m.Data), `"k":"v"`) {
		t.Errorf("small configmap: truncated=%v, data %s", m.Event.Extensions()[contract.ExtTruncated], m.Data)
	}
	checkEq(t, "small id", m.Event.ID(), termID(cmID(string(small.UID), small.ResourceVersion, "added"), m))
	if n := b.countLog("Object exceeds the message size limit"); n != 3 {
		t.Errorf("the bridge logged %d oversize objects, want 3", n)
	}
	if b.exited() {
		t.Fatalf("the bridge exited: %v", b.state)
	}
	b.stop()
}

// TestMaxPayloadShrinksWhileRunning restarts NATS with a smaller max
// payload while the bridge runs (a server reconfigured, or a reconnect to
// a cluster member with a lower limit). Objects larger than the new limit
// must still be published truncated, as the README promises for objects
// larger than the max payload, and snapshots must stay consistent.
func TestMaxPayloadShrinksWhileRunning(t *testing.T) {
	env := testenv.Get(t)
	h := newHarness(t)
	orig := h.nc.MaxPayload()
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "2s"})
	// Cleanups run last-in first-out: the bridge is stopped first.
	t.Cleanup(func() {
		if err := env.RestartNATS(func(o *server.Options) { o.MaxPayload = int32(orig) }); err != nil {
			t.Errorf("restore the NATS max payload: %v", err)
		}
	})
	if err := env.RestartNATS(func(o *server.Options) { o.MaxPayload = 8192 }); err != nil {
		t.Fatal(err)
	}
	b.waitLog("Reconnected to NATS", 30*time.Second)
	bigCM := h.createCM(h.ns, "big", nil, map[string]string{"blob": strings.Repeat("0123456789", 2000)})
	h.createCM(h.ns, "small", nil, map[string]string{"k": "v"})
	typ := h.cmType()
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs := h.waitStream("two periodic snapshots after the changes", convergeTimeout, func(m []replay.Message) string {
		s, err := h.tryApply(m)
		if err != nil {
			return err.Error()
		}
		if s.Snapshots[typ] < 3 {
			return "fewer than 2 periodic snapshots"
		}
		return ""
	})
	st := h.applyAll(t, msgs)
	if d := diffState(stateOf(st, typ), want); d != "" {
		t.Errorf("the replayed state differs from the apiserver's list: %s", d)
	}
	checkSnapshots(t, msgs)
	checkNoRegressions(t, st)
	added := ofType(onSubject(msgs, h.cmSubject(h.ns, "big")), contract.TypeAdded, "")
	if len(added) != 1 || added[0].Ext(contract.ExtTruncated) != "true" || added[0].Ext(contract.ExtResourceVersion) != bigCM.ResourceVersion {
		t.Errorf("want one truncated added event for big:\n%s", describe(onSubject(msgs, h.cmSubject(h.ns, "big"))))
	}
}

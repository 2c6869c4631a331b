package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestRelistAfterCompaction makes the bridge's informer hit "410 Gone: too
// old resource version" and relist, in an environment of its own whose
// kube-apiserver has no watch cache (so watches are served from etcd's
// history). While the apiserver is down, objects are deleted, updated and
// created directly in etcd — as another apiserver of the cluster would —
// and etcd is compacted past everything the bridge has seen. When the
// apiserver is back, the informer's watch from its last resourceVersion
// must fail with 410 and the informer relists. Every change of the gap
// must reach the stream: deletes as deleted with finalstateunknown=true,
// the update as updated, the create as added.
func TestRelistAfterCompaction(t *testing.T) {
	ctx, env, h := startRelistTest(t)
	typ := h.cmType()
	keep := map[int]*corev1.ConfigMap{}
	for i := range 6 {
		keep[i] = h.createCM(h.ns, fmt.Sprintf("keep-%d", i), nil, map[string]string{"v": "0"})
	}
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_LOG_VERBOSITY": "4"})

	// A change through the watch, so the informer's resourceVersion is
	// recent and the stream shows the watch works.
	k0 := keep[0].DeepCopy()
	k0.Data["v"] = "1"
	keep[0] = h.updateCM(k0)
	h.waitStream("the update of keep-0", 30*time.Second, func(m []replay.Message) string {
		if len(ofType(m, contract.TypeUpdated, h.cmSubject(h.ns, "keep-0"))) == 0 {
			return "no updated event for keep-0"
		}
		return ""
	})

	// ---- the gap: the apiserver is down, etcd changes under it ----
	rev := whileAPIServerDown(ctx, t, env, func() {
		key := func(name string) string { return "/registry/configmaps/" + h.ns + "/" + name }
		for _, name := range []string{"keep-1", "keep-2"} {
			if _, err := env.Etcdctl(ctx, "del", key(name)); err != nil {
				t.Fatal(err)
			}
		}
		k3 := keep[3].DeepCopy()
		k3.Data["v"] = "gap"
		etcdPut(ctx, t, env, key("keep-3"), k3)
		gapNew := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "gap-new", Namespace: h.ns, UID: newUID(t), CreationTimestamp: metav1.Now()},
			Data:       map[string]string{"v": "gap"},
		}
		etcdPut(ctx, t, env, key("gap-new"), gapNew)
	})
	t.Logf("etcd changed directly and compacted to revision %d (the bridge last saw %s)", rev, keep[0].ResourceVersion)

	// ---- more changes through the API right after the restart ----
	k4 := keep[4].DeepCopy()
	k4.Data["v"] = "after"
	h.updateCM(k4)
	h.createCM(h.ns, "post-new", nil, map[string]string{"v": "after"})
	h.deleteCM(h.ns, "keep-5")

	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	if _, ok := want[h.cmSubject(h.ns, "gap-new")]; !ok {
		t.Fatalf("the object written to etcd is not served by the apiserver: %v", want)
	}
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, nil)
	defer logOnFailure(t, msgs)
	b.stop()

	checkEventsOnly(t, msgs, st)

	// The informer relisted because its watch was too old.
	tooOld := regexp.MustCompile(`(?i)too old`)
	var evidence []string
	for _, l := range lines(b.output()) {
		if tooOld.MatchString(l) && strings.Contains(l, "atch") {
			evidence = append(evidence, l)
		}
	}
	if len(evidence) == 0 {
		t.Errorf("the bridge log shows no watch failing with 410 / too old resource version")
	} else {
		t.Logf("relist evidence in the bridge log:\n    %s", strings.Join(evidence, "\n    "))
	}
	// And it says where its watch had got to: at keep-0's update or a
	// bookmark after it, before the gap (the robustness test's blind
	// spans start from there).
	relisted := false
	for _, r := range relistsFromIn(b.output(), time.Now()) {
		if r.resource == "configmaps.v1" && cmpRV(r.rv, keep[0].ResourceVersion) >= 0 && cmpRV(r.rv, fmt.Sprint(rev)) < 0 {
			relisted = true
		}
	}
	if !relisted {
		t.Errorf("the bridge logged no relist of configmaps.v1 from a resourceVersion in [%s, %d): %v", keep[0].ResourceVersion, rev, relistsFromIn(b.output(), time.Now()))
	}

	// Deletes of the gap can only be known from the relist.
	for _, name := range []string{"keep-1", "keep-2"} {
		dels := ofType(onSubject(msgs, h.cmSubject(h.ns, name)), contract.TypeDeleted, "")
		if len(dels) != 1 {
			t.Errorf("%d deleted events for %s, want 1", len(dels), name)
			continue
		}
		checkEq(t, name+" finalstateunknown", dels[0].Ext(contract.ExtFinalStateUnknown), "true")
		checkEq(t, name+" deleted id", dels[0].Event.ID(), termID(cmID(string(keep[nameIndex(name)].UID), keep[nameIndex(name)].ResourceVersion, "deleted"), dels[0]))
	}
	for _, x := range []struct{ name, typ string }{
		{"keep-3", contract.TypeUpdated}, {"gap-new", contract.TypeAdded}, {"keep-4", contract.TypeUpdated}, {"post-new", contract.TypeAdded},
	} {
		subj := h.cmSubject(h.ns, x.name)
		evs := ofType(onSubject(msgs, subj), x.typ, "")
		if len(evs) != 1 || evs[0].Ext(contract.ExtResourceVersion) != want[subj] {
			t.Errorf("%s: want one %s event at rv %s; events on it:\n%s", x.name, x.typ, want[subj], describe(onSubject(msgs, subj)))
		}
	}
	if d := ofType(onSubject(msgs, h.cmSubject(h.ns, "keep-5")), contract.TypeDeleted, ""); len(d) != 1 {
		t.Errorf("%d deleted events for keep-5, want 1", len(d))
	} else {
		t.Logf("keep-5 (deleted through the API after the restart): finalstateunknown=%q", d[0].Ext(contract.ExtFinalStateUnknown))
	}
	upd := ofType(onSubject(msgs, h.cmSubject(h.ns, "keep-3")), contract.TypeUpdated, "")
	if len(upd) == 1 {
		var d struct{ Object, OldObject corev1.ConfigMap }
		if err := json.Unmarshal(upd[0].Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Object.Data["v"] != "gap" || d.OldObject.Data["v"] != "0" || d.OldObject.ResourceVersion != keep[3].ResourceVersion {
			t.Errorf("keep-3 updated: object data %v, oldObject data %v rv %s (want gap, 0, %s)", d.Object.Data, d.OldObject.Data, d.OldObject.ResourceVersion, keep[3].ResourceVersion)
		}
	}
}

func nameIndex(name string) int {
	var i int
	_, _ = fmt.Sscanf(name, "keep-%d", &i)
	return i
}

// etcdPut stores obj as the apiserver would read it back: JSON is one of
// the encodings its storage decoder recognises. The resourceVersion comes
// from etcd's revision.
func etcdPut(ctx context.Context, t *testing.T, env *testenv.Env, key string, obj *corev1.ConfigMap) {
	t.Helper()
	obj = obj.DeepCopy()
	obj.APIVersion, obj.Kind = "v1", "ConfigMap"
	obj.ResourceVersion = ""
	obj.ManagedFields = nil
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Etcdctl(ctx, "put", key, string(raw)); err != nil {
		t.Fatal(err)
	}
}

func newUID(t *testing.T) types.UID {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

// TestRecreateAcrossRelist deletes a ConfigMap and creates another of the
// same name (a new uid) while the bridge cannot watch: the apiserver is
// down, both writes go to etcd directly and etcd is compacted, so the
// informer relists (410) and finds the name with another uid. That is two
// objects: the stream must show deleted (old uid, finalstateunknown) and
// then added (new uid) on the subject, never one updated event whose
// object and oldObject have different uids.
func TestRecreateAcrossRelist(t *testing.T) {
	ctx, env, h := startRelistTest(t)
	typ := h.cmType()
	old := h.createCM(h.ns, "phoenix", nil, map[string]string{"v": "old"})
	other := h.createCM(h.ns, "other", nil, map[string]string{"v": "0"})
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_LOG_VERBOSITY": "4"})
	// A change through the watch, so the informer's resourceVersion is
	// recent.
	other = other.DeepCopy()
	other.Data["v"] = "1"
	other = h.updateCM(other)
	h.waitEvent(h.cmSubject(h.ns, "other"), contract.TypeUpdated, other.ResourceVersion)

	reborn := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "phoenix", Namespace: h.ns, UID: newUID(t), CreationTimestamp: metav1.Now()},
		Data:       map[string]string{"v": "new"},
	}
	rev := whileAPIServerDown(ctx, t, env, func() {
		key := "/registry/configmaps/" + h.ns + "/phoenix"
		if _, err := env.Etcdctl(ctx, "del", key); err != nil {
			t.Fatal(err)
		}
		etcdPut(ctx, t, env, key, reborn)
	})
	t.Logf("phoenix (uid %s) replaced in etcd by uid %s; compacted to revision %d", old.UID, reborn.UID, rev)

	cur, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, "phoenix", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur.UID != reborn.UID {
		t.Fatalf("the apiserver serves phoenix with uid %s, not the %s written to etcd", cur.UID, reborn.UID)
	}
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, func(s *replay.State) string {
		if o := s.Objects[h.cmSubject(h.ns, "phoenix")]; o.UID != string(reborn.UID) {
			return fmt.Sprintf("phoenix has uid %q in the replayed state", o.UID)
		}
		return ""
	})
	defer logOnFailure(t, msgs)
	b.stop()

	checkEventsOnly(t, msgs, st)
	if b.countLog("too old") == 0 {
		t.Errorf("the bridge log shows no watch failing with 410 / too old resource version: the informer did not relist, the test proves nothing")
	}

	// No event anywhere pairs two uids.
	for _, m := range ofType(msgs, contract.TypeUpdated, "") {
		var d struct{ Object, OldObject metav1.PartialObjectMetadata }
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Fatalf("seq %d: %v", m.Seq, err)
		}
		if d.Object.UID != d.OldObject.UID {
			t.Errorf("seq %d: updated on %s from uid %s to uid %s: a recreated object must be deleted + added", m.Seq, m.Subject, d.OldObject.UID, d.Object.UID)
		}
	}

	// On phoenix's subject: its snapshot item, then deleted of the old uid,
	// then added of the new one.
	var got []string
	for _, m := range onSubject(msgs, h.cmSubject(h.ns, "phoenix")) {
		got = append(got, strings.TrimPrefix(m.Event.Type(), "io.kubebridge.")+" "+m.Ext(contract.ExtUID))
	}
	wantSeq := []string{
		"snapshot.item " + string(old.UID),
		"object.deleted " + string(old.UID),
		"object.added " + string(reborn.UID),
	}
	if strings.Join(got, "\n") != strings.Join(wantSeq, "\n") {
		t.Errorf("events on phoenix:\n    %s\nwant:\n    %s", strings.Join(got, "\n    "), strings.Join(wantSeq, "\n    "))
	}
	if dels := ofType(onSubject(msgs, h.cmSubject(h.ns, "phoenix")), contract.TypeDeleted, ""); len(dels) == 1 {
		checkEq(t, "deleted finalstateunknown", dels[0].Ext(contract.ExtFinalStateUnknown), "true")
		checkEq(t, "deleted id", dels[0].Event.ID(), termID(cmID(string(old.UID), old.ResourceVersion, "deleted"), dels[0]))
	}
	if adds := ofType(onSubject(msgs, h.cmSubject(h.ns, "phoenix")), contract.TypeAdded, ""); len(adds) == 1 {
		checkEq(t, "added id", adds[0].Event.ID(), termID(cmID(string(reborn.UID), cur.ResourceVersion, "added"), adds[0]))
		if !strings.Contains(string(adds[0].Data), `"v":"new"`) {
			t.Errorf("added data is not the new object: %s", adds[0].Data)
		}
	}
}

// startRelistTest starts a relist test: a context of four minutes, an
// environment without the watch cache, and a harness in it.
func startRelistTest(t *testing.T) (context.Context, *testenv.Env, *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	env := envWithoutWatchCache(ctx, t)
	return ctx, env, newHarnessIn(t, env)
}

// whileAPIServerDown kills the apiserver, lets change edit etcd under it,
// compacts etcd and starts the apiserver again; it returns the revision
// etcd was compacted to.
func whileAPIServerDown(ctx context.Context, t *testing.T, env *testenv.Env, change func()) int64 {
	t.Helper()
	env.KillAPIServer()
	t.Log("kube-apiserver killed")
	change()
	rev, err := env.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Log("kube-apiserver started again")
	return rev
}

// envWithoutWatchCache starts an environment of the test's own whose
// apiserver serves watches from etcd (--watch-cache=false), so that a watch
// from a compacted resourceVersion fails with 410 and the informer relists.
func envWithoutWatchCache(ctx context.Context, t *testing.T) *testenv.Env {
	t.Helper()
	return ownEnv(ctx, t, "--watch-cache=false")
}

// ownEnv starts an environment of the test's own, its apiserver run with
// flags, closed when the test ends (its logs kept if it failed).
func ownEnv(ctx context.Context, t *testing.T, flags ...string) *testenv.Env {
	t.Helper()
	testenv.Get(t) // skips without binaries; builds the bridge
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{APIServerFlags: flags})
	testenv.SkipIfNoBinaries(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			env.KeepLogs()
			t.Logf("component logs kept in %s", env.LogDir())
		}
		env.Close()
	})
	t.Logf("own environment (%s) up in %v", strings.Join(flags, " "), time.Since(start).Round(time.Millisecond))
	return env
}

// checkEventsOnly checks a replay in which every change must be an event:
// there was no snapshot after the start-up one, so nothing is swept.
func checkEventsOnly(t *testing.T, msgs []replay.Message, st *replay.State) {
	t.Helper()
	checkNoRegressions(t, st)
	checkSnapshots(t, msgs)
	checkUniqueIDs(t, msgs)
	if len(st.Swept) > 0 {
		t.Errorf("objects swept (there was no snapshot after the start-up one, so every change must be an event): %v", st.Swept)
	}
}

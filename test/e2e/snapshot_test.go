package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestStartupSnapshot starts the bridge over 500 existing ConfigMaps: the
// start-up snapshot reports each exactly once, framed by begin and end
// with snapshotcount 500, and none of them as added.
func TestStartupSnapshot(t *testing.T) {
	const n = 500
	h := newHarness(t)

	created := h.createMany(n)
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps"})
	typ := h.cmType()
	msgs := h.waitStream("the start-up snapshot's end marker", 30*time.Second, func(m []replay.Message) string {
		if len(ofType(m, contract.TypeSnapshotEnd, typ+".")) == 0 {
			return "no end marker"
		}
		return ""
	})

	if len(msgs) != n+3 {
		t.Errorf("stream holds %d messages, want %d (the term marker, begin, %d items, end)", len(msgs), n+3, n)
	}
	if msgs[0].Event.Type() != contract.TypeTerm {
		t.Errorf("first message %s, want the term marker", msgs[0].Event.Type())
	}
	msgs = msgs[1:]
	begin, end := msgs[0], msgs[len(msgs)-1]
	checkEq(t, "first message type", begin.Event.Type(), contract.TypeSnapshotBegin)
	checkEq(t, "last message type", end.Event.Type(), contract.TypeSnapshotEnd)
	checkEq(t, "begin subject", begin.Subject, typ+"._snapshot.begin")
	checkEq(t, "end subject", end.Subject, typ+"._snapshot.end")
	sid := begin.Ext(contract.ExtSnapshotID)
	if sid == "" {
		t.Fatal("begin marker without snapshotid")
	}
	checkEq(t, "end snapshotid", end.Ext(contract.ExtSnapshotID), sid)
	checkEq(t, "begin id", begin.Event.ID(), "configmaps.v1/"+sid+"/snapshot.begin")
	checkEq(t, "end id", end.Event.ID(), "configmaps.v1/"+sid+"/snapshot.end")
	checkEq(t, "begin Nats-Msg-Id", begin.Header.Get("Nats-Msg-Id"), "e2e/configmaps.v1/"+sid+"/snapshot.begin")
	checkEq(t, "begin source", begin.Event.Source(), "k8s://e2e/api/v1/configmaps")
	checkEq(t, "snapshotcount", end.Ext(contract.ExtSnapshotCount), fmt.Sprint(n))
	for _, m := range []replay.Message{begin, end} {
		if len(m.Data) != 0 || m.Event.DataContentType() != "" {
			t.Errorf("%s marker carries data %q (datacontenttype %q)", m.Event.Type(), m.Data, m.Event.DataContentType())
		}
	}

	items := ofType(msgs, contract.TypeSnapshotItem, "")
	if len(items) != n {
		t.Errorf("%d snapshot items, want %d", len(items), n)
	}
	seen := map[string]bool{}
	for _, m := range items {
		name := m.Ext(contract.ExtName)
		cm, ok := created[name]
		switch {
		case !ok:
			t.Errorf("seq %d: item for %q, which the test did not create", m.Seq, name)
			continue
		case seen[name]:
			t.Errorf("seq %d: second item for %s", m.Seq, name)
		}
		seen[name] = true
		checkEq(t, name+" subject", m.Subject, h.cmSubject(h.ns, name))
		checkEq(t, name+" id", m.Event.ID(), cmID(string(cm.UID), cm.ResourceVersion, "snapshot.item/"+sid))
		checkEq(t, name+" snapshotid", m.Ext(contract.ExtSnapshotID), sid)
		checkEq(t, name+" resourceversion", m.Ext(contract.ExtResourceVersion), cm.ResourceVersion)
	}
	for _, typ := range []string{contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted} {
		if got := ofType(msgs, typ, ""); len(got) > 0 {
			t.Errorf("%d %s events for objects that existed before the start:\n%s", len(got), typ, describe(got[:min(len(got), 10)]))
		}
	}
	checkUniqueIDs(t, msgs)
	st := h.applyAll(t, msgs)
	if d := diffState(stateOf(st, typ), h.listConfigMaps(h.ns, metav1.ListOptions{})); d != "" {
		t.Errorf("replayed state differs from the apiserver's list: %s", d)
	}
	if b.countLog(`reason="start-up" items=500`) != 1 {
		t.Errorf("bridge did not log the start-up snapshot of 500 items")
	}

	// A ConfigMap created now is an added event: the absence of added
	// events above was not just silence.
	late := h.createCM(h.ns, "late", nil, map[string]string{"k": "v"})
	h.waitStream("added for late", 30*time.Second, func(m []replay.Message) string {
		for _, a := range ofType(m, contract.TypeAdded, "") {
			if a.Event.ID() == termID(cmID(string(late.UID), late.ResourceVersion, "added"), a) {
				return ""
			}
		}
		return "no added event for late"
	})
}

// createMany creates n ConfigMaps cm-NNN concurrently and returns them by
// name.
func (h *harness) createMany(n int) map[string]*corev1.ConfigMap {
	h.t.Helper()
	return h.createManyWith(n, func(i int) string { return fmt.Sprintf("cm-%03d", i) }, 0)
}

// createManyWith creates n ConfigMaps named name(i) concurrently, each
// with filler bytes of extra data, and returns them by name.
func (h *harness) createManyWith(n int, name func(int) string, filler int) map[string]*corev1.ConfigMap {
	h.t.Helper()
	pad := strings.Repeat("p", filler)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	out := map[string]*corev1.ConfigMap{}
	var errs []error
	names := make(chan string)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				data := map[string]string{"name": name}
				if pad != "" {
					data["filler"] = pad
				}
				cm, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					out[name] = cm
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		names <- name(i)
	}
	close(names)
	wg.Wait()
	if len(errs) > 0 {
		h.t.Fatalf("creating %d configmaps: %d errors, first: %v", n, len(errs), errs[0])
	}
	h.t.Logf("created %d configmaps in %v", n, time.Since(start).Round(time.Millisecond))
	return out
}

// TestPeriodicSnapshotsUnderChurn publishes a snapshot every second while
// ~50 names are created, updated and deleted for up to 10 seconds (until
// six snapshots completed): no resourceVersion may go back, no snapshot
// may sweep anything (no change was lost), and once the churn stops the
// replayed state is the apiserver's.
func TestPeriodicSnapshotsUnderChurn(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	for i := range 20 {
		h.createCM(h.ns, fmt.Sprintf("churn-%02d", i*2), nil, map[string]string{"i": "pre"})
	}
	h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "1s"})

	// The churn lasts until it has made 200 changes and six snapshots
	// completed, at most 10s: periodic snapshots every second overlap it.
	c := startChurn(h.cs, h.ns, 50, 5*time.Millisecond, 1)
	began, completed := time.Now(), 0
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		msgs, err := h.read()
		if err != nil {
			return false, nil
		}
		if st, err := h.tryApply(msgs); err == nil {
			completed = st.Snapshots[typ]
		}
		return c.ops() >= 200 && completed >= 6, nil
	})
	if errs := c.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	t.Logf("churn for %v: %v", time.Since(began).Round(time.Millisecond), c)
	if err != nil {
		t.Errorf("within 10s of churn: %d changes (want 200) and %d snapshots completed (want 6, BRIDGE_RESYNC_PERIOD=1s)", c.ops(), completed)
	}

	// Wait for two more completed snapshots, so that at least one began
	// after the last change, and for the state to match.
	after := h.applyAll(t, h.mustRead()).Snapshots[typ]
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, func(s *replay.State) string {
		if s.Snapshots[typ] < after+2 {
			return fmt.Sprintf("%d snapshots completed since the churn stopped, want 2", s.Snapshots[typ]-after)
		}
		return ""
	})

	ends := checkSnapshots(t, msgs)
	t.Logf("%d messages: %d snapshots (%d items), %d added, %d updated, %d deleted", len(msgs), ends[typ],
		len(ofType(msgs, contract.TypeSnapshotItem, "")), len(ofType(msgs, contract.TypeAdded, "")),
		len(ofType(msgs, contract.TypeUpdated, "")), len(ofType(msgs, contract.TypeDeleted, "")))
	if after < 6 {
		t.Errorf("only %d snapshots completed by the end of the churn with BRIDGE_RESYNC_PERIOD=1s", after)
	}
	checkNoRegressions(t, st)
	if n := checkSweeps(t, msgs, st); n > 0 {
		t.Logf("%d snapshot ends swept an object just before its deleted event", n)
	}
	checkUniqueIDs(t, msgs)
	// Every delete made by the churn is in the stream (unless the object
	// never was: created and deleted while both were pending).
	if never := checkDeletes(t, msgs, c.deletedUIDs()); never > 0 {
		t.Logf("%d objects were created and deleted without ever being published", never)
	}
}

// TestSnapshotsUnderHotUpdates publishes snapshots back to back (every
// 10ms) while six writers update two objects unconditionally as fast as
// the apiserver allows and two more create and delete objects, so that
// snapshot listings and the handler's queue keep overtaking each other. The order guard must keep every
// resourceVersion from going back. (The overtaking windows are short; on
// a fast machine they mostly open under -race, which `make test` uses.)
func TestSnapshotsUnderHotUpdates(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	names := []string{"hot-0", "hot-1"}
	for _, n := range names {
		h.createCM(h.ns, n, nil, map[string]string{"w": "init"})
	}
	h.startBridge(map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "10ms"})

	// The writers run for 10s, the length of the race under test; a
	// request in flight at the end is waited for, not cancelled.
	writing, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	updates := 0
	var errs []error
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; writing.Err() == nil; i++ {
				name := names[(w+i)%len(names)]
				// No resourceVersion: an unconditional update, so writers
				// never conflict.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := h.cs.CoreV1().ConfigMaps(h.ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"w": fmt.Sprint(w, "-", i)}}, metav1.UpdateOptions{})
				cancel()
				mu.Lock()
				if err == nil {
					updates++
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	// Two more writers create and delete objects, so deletes race with
	// the listings too.
	cycles := 0
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("hot-del-%d", w)
			for i := 0; writing.Err() == nil; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
				if err == nil {
					err = h.cs.CoreV1().ConfigMaps(h.ns).Delete(ctx, name, metav1.DeleteOptions{})
				}
				cancel()
				mu.Lock()
				if err == nil {
					cycles++
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failed requests, first: %v", len(errs), errs[0])
	}

	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	before := h.applyAll(t, h.mustRead()).Snapshots[typ]
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, func(s *replay.State) string {
		if s.Snapshots[typ] < before+2 {
			return "fewer than 2 snapshots since the updates stopped"
		}
		return ""
	})
	t.Logf("%d updates, %d create+delete cycles; %d messages: %d snapshots, %d updated, %d deleted events", updates, cycles, len(msgs),
		len(ofType(msgs, contract.TypeSnapshotEnd, "")), len(ofType(msgs, contract.TypeUpdated, "")), len(ofType(msgs, contract.TypeDeleted, "")))
	checkNoRegressions(t, st)
	checkSnapshots(t, msgs)
	checkUniqueIDs(t, msgs)
	if n := checkSweeps(t, msgs, st); n > 0 {
		t.Logf("%d snapshot ends swept an object just before its deleted event", n)
	}
	if n := len(ofType(msgs, contract.TypeSnapshotEnd, "")); n < 50 {
		t.Errorf("only %d snapshots with BRIDGE_RESYNC_PERIOD=10ms", n)
	}
}

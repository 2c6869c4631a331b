package consume_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// What informers' handlers did, per object, and how two such records
// compare: the definition of "modulo coalescing" in the package
// documentation, as code.

// callLog records an informer's handler calls per uid.
type callLog struct {
	mu    sync.Mutex
	calls map[types.UID][]call
}

// call is one handler call: its kind (add, update, delete), the object's
// key and resourceVersion, and on updates the old object's.
type call struct {
	op, key, rv, oldRV string
	labels             map[string]string
}

// gone is the state after a delete.
const gone = "gone"

func (c call) state() string {
	if c.op == "delete" {
		return gone
	}
	return c.rv
}

func newCallLog() *callLog { return &callLog{calls: map[types.UID][]call{}} }

func (l *callLog) record(op string, obj, old any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	c := call{op: op, key: m.GetNamespace() + "/" + m.GetName(), rv: m.GetResourceVersion(), labels: m.GetLabels()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old != nil {
		om, err := meta.Accessor(old)
		if err != nil {
			panic(err)
		}
		c.oldRV = om.GetResourceVersion()
		if om.GetUID() != m.GetUID() {
			// A relist found the name held by another object: client-go
			// reports that as an update across uids. Per object it is the
			// delete of one and the add of the other.
			l.calls[om.GetUID()] = append(l.calls[om.GetUID()], call{op: "delete", key: c.key, rv: c.oldRV})
			c.op, c.oldRV = "add", ""
		}
	}
	l.calls[m.GetUID()] = append(l.calls[m.GetUID()], c)
}

func (l *callLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.record("add", obj, nil) },
		UpdateFunc: func(old, obj any) { l.record("update", obj, old) },
		DeleteFunc: func(obj any) { l.record("delete", obj, nil) },
	}
}

func (l *callLog) snapshot() map[types.UID][]call {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[types.UID][]call, len(l.calls))
	for uid, cs := range l.calls {
		out[uid] = slices.Clone(cs)
	}
	return out
}

// finals is what the handlers were last told, as key → uid@rv.
func (l *callLog) finals() map[string]string {
	out := map[string]string{}
	for uid, cs := range l.snapshot() {
		if last := cs[len(cs)-1]; last.state() != gone {
			out[last.key] = string(uid) + "@" + last.rv
		}
	}
	return out
}

// states is the sequence of states a uid's calls went through, as an
// informer under selector sel (nil: everything) would see them: an
// object that does not match is gone. A call that leaves the state as it
// was is no new state: client-go calls OnUpdate with the same
// resourceVersion for every object a relist finds unchanged, apiserver
// or NATS alike, and a State does for snapshot items that change nothing.
// (That a NATS watch never sends such an update is checked on the watch,
// by checkedListWatch.)
func states(cs []call, sel labels.Selector) []string {
	var out []string
	prev := gone
	for _, c := range cs {
		st := c.state()
		if st != gone && sel != nil && !sel.Matches(labels.Set(c.labels)) {
			st = gone
		}
		if st != prev {
			out = append(out, st)
			prev = st
		}
	}
	return out
}

// wellFormed finds what no informer may do: add an object held, update
// or delete one not held, or update from another state than the last.
func wellFormed(cs []call) error {
	prev := gone
	for i, c := range cs {
		switch {
		case c.op == "add" && prev != gone:
			return fmt.Errorf("call %d: add while held at %s", i, prev)
		case c.op != "add" && prev == gone:
			return fmt.Errorf("call %d: %s while not held", i, c.op)
		case c.op == "update" && c.oldRV != prev:
			return fmt.Errorf("call %d: update from %s, but the handlers were told %s", i, c.oldRV, prev)
		}
		prev = c.state()
	}
	return nil
}

// isSubsequence reports whether sub is s with some elements left out.
func isSubsequence(sub, s []string) bool {
	i := 0
	for _, x := range s {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}

func final(ss []string) string {
	if len(ss) == 0 {
		return gone
	}
	return ss[len(ss)-1]
}

// compareLogs checks the NATS informer's handler calls against the
// apiserver informer's, uid by uid, and returns how many uids went
// through fewer states over NATS.
func compareLogs(t *testing.T, name string, api, nats *callLog) (fewer int) {
	t.Helper()
	a, n := api.snapshot(), nats.snapshot()
	problems := 0
	report := func(format string, args ...any) {
		if problems++; problems <= 10 {
			t.Errorf(name+": "+format, args...)
		}
	}
	for uid := range uidsOf(a, n) {
		for side, cs := range map[string][]call{"apiserver": a[uid], "NATS": n[uid]} {
			if err := wellFormed(cs); err != nil {
				report("%s handlers, uid %s: %v: %v", side, uid, err, cs)
			}
		}
		sa, sn := states(a[uid], nil), states(n[uid], nil)
		if !isSubsequence(sn, sa) {
			report("uid %s: NATS states %v are not a subsequence of the apiserver's %v", uid, sn, sa)
		}
		if final(sn) != final(sa) {
			report("uid %s: ends %s over NATS, %s from the apiserver", uid, final(sn), final(sa))
		}
		if len(sn) != len(sa) {
			fewer++
		}
	}
	if problems > 10 {
		t.Errorf("%s: %d problems in all", name, problems)
	}
	return fewer
}

// sameStates checks that the informer's handlers went through the same
// states per uid as the reference State's, under the informer's selector.
func sameStates(t *testing.T, name string, nats, ref *callLog, sel labels.Selector) {
	t.Helper()
	n, r := nats.snapshot(), ref.snapshot()
	problems := 0
	for uid := range uidsOf(n, r) {
		if sn, sr := states(n[uid], nil), states(r[uid], sel); !slices.Equal(sn, sr) {
			if problems++; problems <= 10 {
				t.Errorf("%s: uid %s: the NATS informer went through %v, a State reading the same stream through %v", name, uid, sn, sr)
			}
		}
	}
	if problems > 10 {
		t.Errorf("%s: %d uids in all", name, problems)
	}
	t.Logf("%s: the NATS informer and a State: %d uids, the same states for each unless reported", name, len(uidsOf(n, r)))
}

func uidsOf(logs ...map[types.UID][]call) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, l := range logs {
		for uid := range l {
			out[uid] = true
		}
	}
	return out
}

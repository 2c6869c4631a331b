package replay

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

const typ = "kb.c.core.v1.configmaps"

// stream builds messages as they arrive from NATS: the extensions are
// ce- headers, decoded by cenats.Decode, so the replay sees them as a
// consumer does (strings).
type stream struct {
	t    *testing.T
	seq  uint64
	msgs []Message
}

// obj appends an object event; ext holds extra extensions.
func (s *stream) obj(ceType, name, uid, rv string, ext ...string) {
	s.t.Helper()
	h := nats.Header{}
	h.Set("ce-uid", uid)
	h.Set("ce-resourceversion", rv)
	for i := 0; i+1 < len(ext); i += 2 {
		h.Set("ce-"+ext[i], ext[i+1])
	}
	s.add(ceType, typ+".ns."+name, h)
}

func (s *stream) begin(id string) {
	h := nats.Header{}
	h.Set("ce-snapshotid", id)
	s.add(contract.TypeSnapshotBegin, typ+"._snapshot.begin", h)
}

func (s *stream) end(id string, n int) {
	h := nats.Header{}
	h.Set("ce-snapshotid", id)
	h.Set("ce-snapshotcount", fmt.Sprint(n))
	s.add(contract.TypeSnapshotEnd, typ+"._snapshot.end", h)
}

func (s *stream) add(ceType, subject string, h nats.Header) {
	s.t.Helper()
	s.seq++
	h.Set("ce-specversion", "1.0")
	h.Set("ce-id", fmt.Sprint("id-", s.seq))
	h.Set("ce-source", "k8s://c/api/v1/configmaps")
	h.Set("ce-type", ceType)
	ev, err := cenats.Decode(&nats.Msg{Subject: subject, Header: h})
	if err != nil {
		s.t.Fatal(err)
	}
	s.msgs = append(s.msgs, Message{Seq: s.seq, Subject: subject, Header: h, Event: ev})
}

func (s *stream) replay() (*State, error) {
	st := NewState(contract.Subjects{Prefix: "kb", Cluster: "c"})
	for _, m := range s.msgs {
		if err := st.Apply(m); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *stream) mustReplay() *State {
	s.t.Helper()
	st, err := s.replay()
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

func subj(name string) string { return typ + ".ns." + name }

func TestRegressionIsPerUID(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10")
	s.obj(contract.TypeUpdated, "a", "u1", "20")
	// Deleted and created again (a relist): the new object's first
	// version is newer here, but a new uid is a new object in any case.
	s.obj(contract.TypeDeleted, "a", "u1", "20", "finalstateunknown", "true")
	s.obj(contract.TypeAdded, "a", "u2", "30")
	s.obj(contract.TypeUpdated, "a", "u2", "40")
	st := s.mustReplay()
	if len(st.Regressions) > 0 {
		t.Errorf("regressions across uids: %v", st.Regressions)
	}
	if o := st.Objects[subj("a")]; o.UID != "u2" || o.ResourceVersion != "40" {
		t.Errorf("a = %+v, want u2 at 40", o)
	}

	// A uid going back is still a regression, with another uid in between.
	s.obj(contract.TypeUpdated, "a", "u2", "35")
	st = s.mustReplay()
	if len(st.Regressions) != 1 || !strings.Contains(st.Regressions[0], "rv 35 after 40") {
		t.Errorf("regressions = %v, want one for rv 35 after 40", st.Regressions)
	}
}

// A snapshot can list a name's new object before the delete of its
// previous one is published (the indexer runs ahead of the live events).
// The late delete carries an older resourceVersion than the item: per name
// that would look like a regression, and it must not remove the new
// object.
func TestLateDeleteOfPreviousUID(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10")
	s.begin("s1")
	s.obj(contract.TypeSnapshotItem, "a", "u2", "30", "snapshotid", "s1")
	s.obj(contract.TypeDeleted, "a", "u1", "25")
	s.end("s1", 1)
	st := s.mustReplay()
	if len(st.Regressions) > 0 {
		t.Errorf("regressions: %v", st.Regressions)
	}
	if o, ok := st.Objects[subj("a")]; !ok || o.UID != "u2" || o.ResourceVersion != "30" {
		t.Errorf("a = %+v (present %v), want u2 at 30", o, ok)
	}
	if st.StaleDeletes != 1 || len(st.Swept) > 0 {
		t.Errorf("%d stale deletes, swept %v; want 1 and none", st.StaleDeletes, st.Swept)
	}
}

func TestUpsertAfterDeleteOfSameUID(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10")
	s.obj(contract.TypeDeleted, "a", "u1", "10", "finalstateunknown", "true")
	// The same version as a snapshot item after the relist delete: the
	// object would come back to life in the consumer's state.
	s.begin("s1")
	s.obj(contract.TypeSnapshotItem, "a", "u1", "10", "snapshotid", "s1")
	st := s.mustReplay()
	if len(st.Regressions) != 1 || !strings.Contains(st.Regressions[0], "after the deleted event") {
		t.Errorf("regressions = %v, want one for the upsert after the delete", st.Regressions)
	}
}

func TestDeleteOfAnotherUIDIsNoOp(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u2", "30")
	// A late delete of the name's previous object must not remove the
	// current one.
	s.obj(contract.TypeDeleted, "a", "u1", "20", "finalstateunknown", "true")
	// A delete of something never seen, and one after a sweep.
	s.obj(contract.TypeDeleted, "b", "u9", "5")
	st := s.mustReplay()
	if o, ok := st.Objects[subj("a")]; !ok || o.UID != "u2" {
		t.Errorf("a = %+v (present %v), want u2", o, ok)
	}
	if st.StaleDeletes != 2 {
		t.Errorf("StaleDeletes = %d, want 2", st.StaleDeletes)
	}
	if len(st.Regressions) > 0 {
		t.Errorf("regressions: %v", st.Regressions)
	}
}

func TestMarkAndSweep(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "gone", "u1", "10")
	s.obj(contract.TypeAdded, "kept", "u2", "11")
	s.obj(contract.TypeAdded, "live", "u3", "12")
	s.begin("s1")
	s.obj(contract.TypeSnapshotItem, "kept", "u2", "11", "snapshotid", "s1")
	s.obj(contract.TypeUpdated, "live", "u3", "13") // seen through a live event
	s.end("s1", 1)
	st := s.mustReplay()
	if !slices.Equal(st.Swept, []string{subj("gone") + " 10"}) {
		t.Errorf("swept %v, want only gone", st.Swept)
	}
	if len(st.Objects) != 2 || st.Snapshots[typ] != 1 {
		t.Errorf("objects %v, snapshots %v", st.Objects, st.Snapshots)
	}
	// The delete of the swept object arrives afterwards: a no-op.
	s.obj(contract.TypeDeleted, "gone", "u1", "14")
	if st := s.mustReplay(); st.StaleDeletes != 1 || len(st.Objects) != 2 {
		t.Errorf("after the late delete: %d stale deletes, objects %v", st.StaleDeletes, st.Objects)
	}

	s.end("s2", 0)
	if _, err := s.replay(); err == nil {
		t.Error("an end marker without its begin was accepted")
	}
}

func TestCoalesced(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10", "coalesced", "3")
	s.obj(contract.TypeUpdated, "a", "u1", "20")
	s.begin("s1")
	// Items may carry coalesced (they supersede pending changes) but
	// are not changes themselves.
	s.obj(contract.TypeSnapshotItem, "a", "u1", "30", "snapshotid", "s1", "coalesced", "2")
	s.end("s1", 1)
	s.obj(contract.TypeDeleted, "a", "u1", "40", "coalesced", "2")
	st := s.mustReplay()
	if st.Changes[typ] != 6 {
		t.Errorf("Changes = %d, want 6 (3 + 1 + 2)", st.Changes[typ])
	}
	if n, err := s.msgs[0].Coalesced(); n != 3 || err != nil {
		t.Errorf("Coalesced() = %d, %v", n, err)
	}
	if n, err := s.msgs[1].Coalesced(); n != 1 || err != nil {
		t.Errorf("Coalesced() without the extension = %d, %v", n, err)
	}

	for _, bad := range []string{"1", "0", "-2", "two"} {
		s := &stream{t: t}
		s.obj(contract.TypeUpdated, "a", "u1", "10", "coalesced", bad)
		if _, err := s.replay(); err == nil {
			t.Errorf("coalesced=%q accepted on an updated event", bad)
		}
	}
	// An item that superseded one pending change may say so; it still
	// is no change in the count.
	s = &stream{t: t}
	s.begin("s1")
	s.obj(contract.TypeSnapshotItem, "a", "u1", "10", "snapshotid", "s1", "coalesced", "1")
	if st := s.mustReplay(); st.Changes[typ] != 0 {
		t.Errorf("Changes = %d after an item, want 0", st.Changes[typ])
	}
	if n, err := s.msgs[1].Coalesced(); n != 1 || err != nil {
		t.Errorf("item Coalesced() = %d, %v; want 1", n, err)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		s := &stream{t: t}
		s.begin("s1")
		s.obj(contract.TypeSnapshotItem, "a", "u1", "10", "snapshotid", "s1", "coalesced", bad)
		if _, err := s.replay(); err == nil {
			t.Errorf("coalesced=%q accepted on a snapshot item", bad)
		}
	}
}

// An object listed as unpublished on the end marker exists: it is not swept.
func TestUnpublishedIsNotSwept(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "grown", "u1", "10")
	s.obj(contract.TypeAdded, "gone", "u2", "11")
	s.begin("s1")
	h := nats.Header{}
	h.Set("ce-snapshotid", "s1")
	h.Set("ce-snapshotcount", "0")
	h.Set("ce-unpublished", "ns.grown")
	s.add(contract.TypeSnapshotEnd, typ+"._snapshot.end", h)
	st := s.mustReplay()
	if _, ok := st.Objects[subj("grown")]; !ok {
		t.Error("an object listed as unpublished was swept")
	}
	if !slices.Equal(st.Swept, []string{subj("gone") + " 11"}) {
		t.Errorf("swept %v, want only gone", st.Swept)
	}
}

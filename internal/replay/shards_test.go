package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// as writes what fn writes as the bridge of shard ("i/N", "" unsharded)
// in term: every event carries both, markers go to the shard's subjects.
func (s *stream) as(shard string, term uint64, fn func()) {
	from := len(s.msgs)
	fn()
	for i := from; i < len(s.msgs); i++ {
		m := &s.msgs[i]
		if shard != "" {
			m.Header.Set("ce-shard", shard)
			m.Event.SetExtension(contract.ExtShard, shard)
			sh, err := contract.ParseShard(shard)
			if err != nil {
				s.t.Fatal(err)
			}
			if sub, err := (contract.Subjects{Prefix: "kb", Cluster: "c"}).Parse(m.Subject); err == nil && sub.Kind != contract.ObjectSubject {
				sub.Shard = sh
				m.Subject = shardSubject(sub)
			}
		}
		if term != 0 {
			m.Header.Set(contract.TermHeader, fmt.Sprint(term))
		}
	}
}

func shardSubject(sub contract.Subject) string {
	s := contract.Subjects{Prefix: "kb", Cluster: "c"}.OfShard(sub.Shard)
	if sub.Kind == contract.BeginSubject {
		return s.SnapshotBegin(sub.Type)
	}
	return s.SnapshotEnd(sub.Type)
}

// termMarker appends shard's term marker and returns its term.
func (s *stream) termMarker(shard string) uint64 {
	h := nats.Header{}
	subjects := contract.Subjects{Prefix: "kb", Cluster: "c"}
	if shard != "" {
		h.Set("ce-shard", shard)
		sh, err := contract.ParseShard(shard)
		if err != nil {
			s.t.Fatal(err)
		}
		subjects = subjects.OfShard(sh)
	}
	s.add(contract.TypeTerm, subjects.Term(), h)
	return s.seq
}

// Each shard's snapshot sweeps only the objects its shard wrote last, and
// the term rule holds per shard.
func TestShardsSweepAndTermsApart(t *testing.T) {
	s := &stream{t: t}
	t0 := s.termMarker("0/2")
	old1 := s.termMarker("1/2")
	s.as("0/2", t0, func() {
		s.obj(contract.TypeAdded, "a", "u1", "10")
		s.obj(contract.TypeAdded, "gone0", "u2", "11")
	})
	s.as("1/2", old1, func() {
		s.obj(contract.TypeAdded, "b", "u3", "12")
		s.obj(contract.TypeAdded, "gone1", "u4", "13")
	})
	t1 := s.termMarker("1/2")
	s.as("1/2", t1, func() { s.begin("s1") })
	s.as("0/2", t0, func() { s.begin("s0") })
	// Shard 0's term is below shard 1's newest: still shard 0's leader.
	s.as("0/2", t0, func() { s.obj(contract.TypeSnapshotItem, "a", "u1", "10", "snapshotid", "s0") })
	s.as("1/2", old1, func() { s.obj(contract.TypeAdded, "late", "u5", "14") })
	s.as("1/2", t1, func() { s.obj(contract.TypeSnapshotItem, "b", "u3", "12", "snapshotid", "s1") })
	s.as("0/2", t0, func() { s.end("s0", 1) })
	s.as("1/2", t1, func() { s.end("s1", 1) })
	st := s.mustReplay()
	var held []string
	for subj := range st.Objects {
		held = append(held, subj)
	}
	slices.Sort(held)
	if want := []string{typ + ".ns.a", typ + ".ns.b"}; !slices.Equal(held, want) {
		t.Errorf("held %v, want %v", held, want)
	}
	if len(st.Fenced) != 1 || len(st.Foreign) != 0 || len(st.Swept) != 2 {
		t.Errorf("fenced %v, foreign %v, swept %v; want late fenced, gone0 and gone1 swept", st.Fenced, st.Foreign, st.Swept)
	}
}

// A term no marker backs is foreign: a term at or past the event's own
// sequence, or one between two markers that is neither. Such events are
// reported and not applied, and their term fences nothing; a term older
// than every marker held is taken as real.
func TestForeignTermsAreReportedNotApplied(t *testing.T) {
	s := &stream{t: t}
	s.as("", 0, func() { s.obj(contract.TypeAdded, "old", "u0", "9") })
	t1 := s.termMarker("")
	t2 := s.termMarker("")
	s.as("", t2, func() { s.obj(contract.TypeAdded, "a", "u1", "10") })
	s.as("", 99999999, func() { s.obj(contract.TypeAdded, "forged-high", "u2", "11") })
	s.as("", t1-1, func() { s.obj(contract.TypeAdded, "older-than-markers", "u3", "12") })
	s.as("", t2, func() { s.obj(contract.TypeAdded, "b", "u4", "13") })
	st := s.mustReplay()
	var held []string
	for subj := range st.Objects {
		held = append(held, subj)
	}
	slices.Sort(held)
	if want := []string{typ + ".ns.a", typ + ".ns.b", typ + ".ns.old"}; !slices.Equal(held, want) {
		t.Errorf("held %v, want %v", held, want)
	}
	// The event older than every marker is real, and deposed by t2.
	if len(st.Foreign) != 1 || len(st.Fenced) != 1 || st.Term != t2 {
		t.Errorf("foreign %v, fenced %v, term %d; want forged-high foreign, older-than-markers fenced, term %d", st.Foreign, st.Fenced, st.Term, t2)
	}
}

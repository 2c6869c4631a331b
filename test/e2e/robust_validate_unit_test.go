package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// valCorrectScenario is a run a correct bridge could have made: a first
// term with its start-up snapshot, coalesced updates, an update held back
// and then merged, an object leaving the label selector and entering it
// again, a truncated update; a handover with changes while no bridge
// published (one of them stored late by the deposed leader, before the
// new term wrote the subject), an object created and deleted meanwhile,
// one deleted meanwhile (the new term's finalstateunknown delete); an
// update the new leader publishes before its start-up snapshot reaches
// the object, and that snapshot; a periodic snapshot superseding a
// waiting change and missing an object the bridge's cache did not hold
// yet, and an update still held back at the end.
func valCorrectScenario(t *testing.T) *valScenario {
	s := newValScenario(t)
	a := s.create(valCM, "a", nil)
	b := s.create(valCM, "b", nil)
	s.create(valCM, "c", map[string]any{valOut: "x"}) // never in scope
	s.wait(3 * time.Second)
	s.termMarker(1)
	s.begin(1, valCM, "s1")
	s.item(1, "s1", a).label = "item a s1"
	s.item(1, "s1", b).label = "item b s1"
	s.end(1, valCM, "s1", 2)
	s.begin(1, valWidget, "w1")
	s.end(1, valWidget, "w1", 0)
	s.wait(3 * time.Second)
	valFirstTerm(s, a, b)
	valHandover(s)
	valSecondTerm(s)
	return s
}

func valFirstTerm(s *valScenario, a1, b1 int) {
	a2 := s.update("a", setData("1"))
	s.msg(1, contract.TypeUpdated, a2).with(func(sp *valSpec) { sp.old, sp.label = a1, "a2" })
	s.update("a", setData("2"))
	a4 := s.update("a", setData("3"))
	s.msg(1, contract.TypeUpdated, a4).with(func(sp *valSpec) { sp.old, sp.coalesced, sp.label = a2, 2, "a4" })
	s.update("b", setMetaField("annotations", valIgnored, "1")) // held back
	b3 := s.update("b", setData("1"))
	s.msg(1, contract.TypeUpdated, b3).with(func(sp *valSpec) { sp.old, sp.coalesced, sp.label = b1, 2, "b3" })
	d1 := s.create(valCM, "d", nil)
	s.msg(1, contract.TypeAdded, d1).label = "d1"
	d2 := s.update("d", setMetaField("labels", valOut, "x"))
	s.msg(1, contract.TypeDeleted, d2).with(func(sp *valSpec) { sp.leave, sp.label = true, "d leaves" })
	s.update("d", setData("1")) // out of scope: nothing
	d4 := s.update("d", setMetaField("labels", valOut, nil))
	s.msg(1, contract.TypeAdded, d4).label = "d enters"
	e1 := s.create(valCM, "e", nil)
	s.msg(1, contract.TypeAdded, e1).label = "e1"
	e2 := s.remove("e")
	s.msg(1, contract.TypeDeleted, e2).label = "e deleted"
	w1 := s.create(valWidget, "w", nil)
	s.msg(1, contract.TypeAdded, w1).label = "w1"
	w2 := s.update("w", setData("huge"))
	s.msg(1, contract.TypeUpdated, w2).with(func(sp *valSpec) { sp.old, sp.truncated, sp.label = w1, true, "w2" })
	g1 := s.create(valCM, "g", nil)
	s.msg(1, contract.TypeAdded, g1).label = "g1"
	h1 := s.create(valCM, "h", nil)
	s.msg(1, contract.TypeAdded, h1).label = "h1"
	k1 := s.create(valCM, "k", nil)
	s.msg(1, contract.TypeAdded, k1).label = "k1"
	// A type the run does not check: only ids and terms look at it.
	sec := s.create("kb.c.core.v1.secrets", "x", nil)
	s.msg(1, contract.TypeAdded, sec)
}

// valHandover: the first term's bridge is gone; writes go on.
func valHandover(s *valScenario) {
	s.wait(3 * time.Second)
	s.update("a", setData("4"))
	s.update("a", setData("5"))
	s.create(valCM, "f", nil)
	s.remove("f")
	s.remove("b")
	g2 := s.update("g", setData("1"))
	s.update("g", setData("2"))
	s.update("k", setData("1"))
	s.termMarker(2)
	// The deposed leader's publish of g2, handed to NATS before it froze,
	// stored after the new term began but before it wrote g's subject.
	s.msg(1, contract.TypeUpdated, g2).with(func(sp *valSpec) { sp.old, sp.label = s.specs[s.find("g1")].v, "late g2" })
}

func valSecondTerm(s *valScenario) {
	g2x := s.cur["g"]
	b3 := s.specs[s.find("b3")].v
	s.msg(2, contract.TypeDeleted, b3).with(func(sp *valSpec) { sp.fsu, sp.label = true, "b fsu" })
	// The new leader's first message of k is a change it saw before its
	// snapshot reached k: its oldObject is what its cache held, k2, which
	// the stream never published.
	k2 := s.cur["k"]
	k3 := s.update("k", setData("2"))
	s.msg(2, contract.TypeUpdated, k3).with(func(sp *valSpec) { sp.old, sp.label = k2, "k3" })
	s.begin(2, valCM, "s2")
	a6 := s.cur["a"]
	s.item(2, "s2", a6).label = "item a s2"
	s.item(2, "s2", s.cur["d"]).label = "item d s2"
	s.item(2, "s2", g2x).label = "item g s2"
	s.item(2, "s2", s.cur["h"]).label = "item h s2"
	s.item(2, "s2", k3)
	s.end(2, valCM, "s2", 5).label = "end s2"
	s.begin(2, valWidget, "w2")
	s.item(2, "w2", s.cur["w"]).with(func(sp *valSpec) { sp.truncated, sp.label = true, "item w w2" })
	s.end(2, valWidget, "w2", 1)
	// m is made while the bridge's watch is down: its cache lacks m until
	// it relists, after the next snapshot, and publishes it as added.
	m1 := s.create(valCM, "m", nil)
	s.wait(3 * time.Second)
	h2 := s.update("h", setData("1"))
	s.msg(2, contract.TypeUpdated, h2).with(func(sp *valSpec) { sp.old, sp.label = s.specs[s.find("h1")].v, "h2" })
	h3 := s.update("h", setData("2"))
	s.begin(2, valCM, "s3")
	s.item(2, "s3", a6)
	s.item(2, "s3", s.cur["d"])
	s.item(2, "s3", g2x)
	s.item(2, "s3", h3).with(func(sp *valSpec) { sp.coalesced, sp.label = 1, "item h s3" })
	s.item(2, "s3", k3)
	s.end(2, valCM, "s3", 5)
	s.msg(2, contract.TypeAdded, m1)
	s.wait(3 * time.Second)
	d5 := s.remove("d")
	s.msg(2, contract.TypeDeleted, d5).label = "d deleted"
	s.update("a", setMetaField("annotations", valIgnored, "1")) // held back, then merged
	a8 := s.update("a", setData("6"))
	s.msg(2, contract.TypeUpdated, a8).with(func(sp *valSpec) { sp.old, sp.coalesced, sp.label = a6, 2, "a8" })
	s.update("g", setMetaField("annotations", valIgnored, "1")) // held back at the end
}

func TestValidateCorrectStream(t *testing.T) {
	s := valCorrectScenario(t)
	msgs := s.build()
	for _, v := range validateStream(msgs, &s.hist, s.rules) {
		t.Errorf("%s seq %d %s: %s", v.check, v.seq, v.subject, v.detail)
	}
	// Every way a change reaches the stream is taken.
	got := reliableTallies(msgs, &s.hist, s.rules, nil)[valCM]
	want := reliableTally{changes: 31, own: 16, coalesced: 3, superseded: 4, handover: 5, heldBack: 1, unseen: 2}
	if got != want {
		t.Errorf("tally:\n got %v\nwant %v", got, want)
	}
}

// valWant is the violation a break must bring: its check, sequence (0:
// about a missing message), uid and a part of its detail.
type valWant struct {
	seq    uint64
	uid    string
	detail string
}

// valBreak is one deliberate break of the correct scenario.
type valBreak struct {
	name  string
	check string
	also  []string // checks that may fire with it, as consequences
	apply func(s *valScenario) valWant
}

func valBreaks() []valBreak {
	return []valBreak{
		{name: "an oldObject taken from the wrong version", check: "oldObjects", apply: func(s *valScenario) valWant {
			s.spec("a4").old = s.spec("item a s1").v
			return valWant{seq: s.seqOf("a4"), uid: s.uidOf("a"), detail: "the version published before it"}
		}},
		{name: "coalesced one too high", check: "reliable", apply: func(s *valScenario) valWant {
			s.spec("a4").coalesced = 3
			return valWant{seq: s.seqOf("a4"), uid: s.uidOf("a"), detail: "coalesced 3, but 2 changes"}
		}},
		{name: "coalesced one too low", check: "reliable", apply: func(s *valScenario) valWant {
			s.spec("a4").coalesced = 0
			return valWant{uid: s.uidOf("a"), detail: "lost: the version at rv " + s.hist.versions[s.spec("a4").v-1].rv}
		}},
		{name: "a held-back update left out of the next event's count", check: "reliable", apply: func(s *valScenario) valWant {
			s.spec("b3").coalesced = 0
			return valWant{uid: s.uidOf("b"), detail: "lost: the version at rv " + s.hist.versions[s.spec("b3").v-1].rv}
		}},
		{name: "a snapshot item stored twice", check: "atomic", also: []string{"unique"}, apply: func(s *valScenario) valWant {
			dup := *s.spec("item b s1")
			dup.label = "dup"
			s.insertAfter("item b s1", &dup)
			return valWant{seq: s.seqOf("dup"), uid: s.uidOf("b"), detail: "twice"}
		}},
		{name: "a deposed term's message stored after the new term wrote the subject", check: "unique", apply: func(s *valScenario) valWant {
			s.insertAfter("item g s2", s.drop("late g2"))
			return valWant{seq: s.seqOf("late g2"), uid: s.uidOf("g"), detail: "of term 1 stored on its subject after"}
		}},
		{name: "that message applied as current", check: "ordered", also: []string{"reliable", "oldObjects"}, apply: func(s *valScenario) valWant {
			late := s.drop("late g2")
			late.term = 2
			s.insertAfter("item g s2", late)
			return valWant{seq: s.seqOf("late g2"), uid: s.uidOf("g"), detail: "below rv"}
		}},
		{name: "a delete dropped", check: "reliable", apply: func(s *valScenario) valWant {
			s.drop("e deleted")
			return valWant{uid: s.uidOf("e"), detail: "lost: the deletion"}
		}},
		{name: "a leave of the label selector dropped", check: "reliable", apply: func(s *valScenario) valWant {
			s.drop("d leaves")
			return valWant{uid: s.uidOf("d"), detail: "lost: the update that took it out of scope"}
		}},
		{name: "a version that never existed", check: "valid", also: []string{"ordered", "reliable", "oldObjects"}, apply: func(s *valScenario) valWant {
			s.spec("a4").rv = "99999"
			return valWant{seq: s.seqOf("a4"), uid: s.uidOf("a"), detail: "no such version"}
		}},
		{name: "an object differing from the history", check: "valid", apply: func(s *valScenario) valWant {
			obj := jsonValue(s.rules[valCM].project(s.hist.versions[s.spec("a4").v].object)).(map[string]any)
			obj["data"] = map[string]any{"k": "forged"}
			s.spec("a4").object = obj
			return valWant{seq: s.seqOf("a4"), uid: s.uidOf("a"), detail: `/data/k: want "3", got "forged"`}
		}},
		{name: "an rv going back within a term", check: "ordered", also: []string{"reliable"}, apply: func(s *valScenario) valWant {
			a4 := s.spec("a4")
			s.insertAfter("a4", &valSpec{ceType: contract.TypeUpdated, typ: valCM, v: a4.v - 1, old: a4.v, term: 1, at: a4.at, label: "a3 late"})
			return valWant{seq: s.seqOf("a3 late"), uid: s.uidOf("a"), detail: "below rv"}
		}},
		{name: "an end marker miscounting its items", check: "atomic", apply: func(s *valScenario) valWant {
			s.spec("end s2").count = 6
			return valWant{seq: s.seqOf("end s2"), detail: `snapshotcount "6", but 5 items`}
		}},
		{name: "an object missing from a snapshot", check: "atomic", apply: func(s *valScenario) valWant {
			s.drop("item h s2")
			s.spec("end s2").count = 4
			return valWant{seq: s.seqOf("end s2"), uid: s.uidOf("h"), detail: "does not list n1/h"}
		}},
	}
}

func TestValidateCatchesBreaks(t *testing.T) {
	for _, b := range valBreaks() {
		t.Run(b.name, func(t *testing.T) {
			s := valCorrectScenario(t)
			want := b.apply(s)
			got := validateStream(s.build(), &s.hist, s.rules)
			found := false
			for _, v := range got {
				if v.check == b.check && v.seq == want.seq && v.uid == want.uid && strings.Contains(v.detail, want.detail) {
					found = true
				}
				if v.check != b.check && !slices.Contains(b.also, v.check) {
					t.Errorf("unexpected %s violation at seq %d: %s", v.check, v.seq, v.detail)
				}
			}
			if !found {
				t.Errorf("no %s violation at seq %d of uid %s with %q; got:%s", b.check, want.seq, want.uid, want.detail, valListed(got))
			}
		})
	}
}

func valListed(vs []violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("\n  " + v.check + " seq " + strconv.FormatUint(v.seq, 10) + " uid " + v.uid + ": " + v.detail)
	}
	if len(vs) == 0 {
		return " none"
	}
	return b.String()
}

// TestValidateRelistGap: versions made while the bridge could not watch,
// which its relist no longer shows, are lost to validateStream, and
// missed by a relist when validateStreamBlind is told when that was.
func TestValidateRelistGap(t *testing.T) {
	s := valCorrectScenario(t)
	h3 := s.spec("item h s3").v
	blind := blindSpan{start: s.tick()}
	s.update("h", setData("3")) // the relist sees only h5
	s.create(valCM, "n", nil)   // created, then changed: the relist adds n2
	s.wait(time.Second)
	h5 := s.update("h", setData("4"))
	n2 := s.update("n", setData("1"))
	blind.end = s.tick()
	s.msg(2, contract.TypeUpdated, h5).old = h3
	s.msg(2, contract.TypeAdded, n2)
	msgs := s.build()
	got := validateStream(msgs, &s.hist, s.rules)
	if len(got) != 2 || got[0].check != "reliable" || got[0].uid != s.uidOf("h") || got[1].check != "reliable" || got[1].uid != s.uidOf("n") {
		t.Errorf("without the blind span, want the two missed versions of h and n lost; got:%s", valListed(got))
	}
	if got := validateStreamBlind(msgs, &s.hist, s.rules, []blindSpan{blind}); len(got) != 0 {
		t.Errorf("with the blind span, want no violation; got:%s", valListed(got))
	}
	other := blind
	other.typ = "kb.c.example_com.v1.widgets"
	if got := validateStreamBlind(msgs, &s.hist, s.rules, []blindSpan{other}); len(got) != 2 {
		t.Errorf("with a blind span of another type only, want the two missed versions lost; got:%s", valListed(got))
	}
	own := blind
	own.typ = valCM
	if got := validateStreamBlind(msgs, &s.hist, s.rules, []blindSpan{own}); len(got) != 0 {
		t.Errorf("with a blind span of the ConfigMaps, want no violation; got:%s", valListed(got))
	}
	if n := reliableTallies(msgs, &s.hist, s.rules, []blindSpan{blind})[valCM].relisted; n != 2 {
		t.Errorf("%d changes missed by a relist, want 2", n)
	}
}

// TestValidateRelistMissesALeaveAndReturn: an object leaves the scope and
// comes back as it was while the bridge cannot watch. Its relist shows it
// in scope as last published, an update the rules do not publish: the
// leave is lost to validateStream, and missed by a relist when
// validateStreamBlind is told when that was.
func TestValidateRelistMissesALeaveAndReturn(t *testing.T) {
	s := valCorrectScenario(t)
	blind := blindSpan{start: s.tick()}
	s.update("h", setMetaField("labels", valOut, "x"))
	s.wait(time.Second)
	s.update("h", func(obj map[string]any) {
		obj["metadata"].(map[string]any)["labels"] = nil // as h was created: back as it was
	})
	blind.end = s.tick()
	msgs := s.build()
	got := validateStream(msgs, &s.hist, s.rules)
	if len(got) != 1 || got[0].check != "reliable" || got[0].uid != s.uidOf("h") || !strings.Contains(got[0].detail, "out of scope") {
		t.Errorf("without the blind span, want h's leave lost; got:%s", valListed(got))
	}
	if got := validateStreamBlind(msgs, &s.hist, s.rules, []blindSpan{blind}); len(got) != 0 {
		t.Errorf("with the blind span, want no violation; got:%s", valListed(got))
	}
	if n := reliableTallies(msgs, &s.hist, s.rules, []blindSpan{blind})[valCM].relisted; n != 1 {
		t.Errorf("%d changes missed by a relist, want 1", n)
	}
}

// TestValidateChangesBeforeTheFirstTerm: the traffic starts before the
// first leader publishes, and a leader may die before its start-up
// snapshot reaches an object: the changes made before its term began are
// a handover, those made after it are lost.
func TestValidateChangesBeforeTheFirstTerm(t *testing.T) {
	for _, before := range []bool{true, false} {
		s := newValScenario(t)
		if !before {
			s.termMarker(1)
		}
		x1 := s.create(valCM, "x", nil)
		s.update("x", setData("1"))
		if before {
			s.termMarker(1)
		}
		x3 := s.update("x", setData("2"))
		s.msg(1, contract.TypeUpdated, x3).old = x1
		got := validateStream(s.build(), &s.hist, s.rules)
		switch {
		case before && len(got) != 0:
			t.Errorf("changes made before the first term began: want no violation; got:%s", valListed(got))
		case !before && (len(got) != 2 || got[0].check != "reliable" || got[1].check != "reliable"):
			t.Errorf("changes made after the first term began, published by nothing: want 2 lost (reliable); got:%s", valListed(got))
		}
	}
}

// TestValidateSnapshotOfABlindCache: a snapshot taken while the bridge's
// informer could not watch lists its cache, which lacks an object created
// meanwhile; the next term's snapshot lists it. An atomic violation
// without the blind span, none with it.
func TestValidateSnapshotOfABlindCache(t *testing.T) {
	s := newValScenario(t)
	a := s.create(valCM, "a", nil)
	s.wait(3 * time.Second)
	s.termMarker(1)
	s.begin(1, valCM, "s1")
	s.item(1, "s1", a)
	s.end(1, valCM, "s1", 1)
	blind := blindSpan{start: s.tick()}
	z := s.create(valCM, "z", nil)
	s.wait(3 * time.Second)
	s.begin(1, valCM, "s2")
	s.item(1, "s2", a)
	s.end(1, valCM, "s2", 1)
	blind.end = s.tick()
	s.wait(3 * time.Second)
	s.termMarker(2)
	s.begin(2, valCM, "s3")
	s.item(2, "s3", a)
	s.item(2, "s3", z)
	s.end(2, valCM, "s3", 2)
	msgs := s.build()
	if got := validateStream(msgs, &s.hist, s.rules); len(got) != 1 || got[0].check != "atomic" || got[0].uid != s.uidOf("z") {
		t.Errorf("without the blind span, want snapshot s2 missing z (atomic); got:%s", valListed(got))
	}
	if got := validateStreamBlind(msgs, &s.hist, s.rules, []blindSpan{blind}); len(got) != 0 {
		t.Errorf("with the blind span, want no violation; got:%s", valListed(got))
	}
}

// TestValidateRestatedDeposedDelete: a deposed leader's delete, stored
// after the next term began, is one consumers ignore; the start-up scan of
// a later term publishes it again, finalstateunknown, at the same version
// (a deletion): valid. The same finalstateunknown delete with no deposed
// delete before it carries a version the bridge never had as a last state.
func TestValidateRestatedDeposedDelete(t *testing.T) {
	for _, deposed := range []bool{true, false} {
		s := newValScenario(t)
		s.termMarker(1)
		a := s.create(valCM, "a", nil)
		s.msg(1, contract.TypeAdded, a)
		s.termMarker(2)
		gone := s.remove("a")
		if deposed {
			s.msg(1, contract.TypeDeleted, gone)
		}
		s.termMarker(3)
		s.msg(3, contract.TypeDeleted, gone).with(func(sp *valSpec) { sp.fsu = true })
		got := validateStream(s.build(), &s.hist, s.rules)
		switch {
		case deposed && len(got) != 0:
			t.Errorf("the scan's restatement of a deposed delete: want no violation; got:%s", valListed(got))
		case !deposed && (len(got) != 1 || got[0].check != "valid"):
			t.Errorf("a finalstateunknown delete at a deletion, restating nothing: want 1 valid violation; got:%s", valListed(got))
		}
	}
}

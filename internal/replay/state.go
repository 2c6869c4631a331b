package replay

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Object is the consumer's view of one object.
type Object struct {
	Type            string // the type's subject prefix
	Subject         string
	UID             string
	ResourceVersion string
	Data            []byte
	// Shard is the shard extension of the object's last event, "" for
	// the unsharded bridge (absent or 0/1): only its shard's snapshots
	// sweep it.
	Shard string
}

// State is the reference consumer's state.
//
// An object is identified by its uid within its type: a name deleted and
// created again is a new object with a new uid, so resourceVersions are
// compared per uid, and a subject holds whichever uid was upserted last.
// The same object watched under two types (aliased resources such as
// horizontalpodautoscalers v1 and v2) is two objects, one per type.
type State struct {
	// Objects by subject.
	Objects map[string]Object
	// Regressions lists every message that carried an older
	// resourceVersion for an object (a uid of a type) than one applied
	// before, and every upsert of a uid after its deleted event.
	Regressions []string
	// Swept lists every object removed by a snapshot end marker, as
	// "subject rv".
	Swept []string
	// Snapshots counts completed snapshots per type.
	Snapshots map[string]int
	// StaleDeletes counts deleted events that removed nothing because the
	// subject held another uid, or nothing (swept, or never seen).
	StaleDeletes int
	// Changes counts, per type, the changes that added, updated and
	// deleted events stand for (the coalesced extension, or 1 each).
	Changes map[string]int
	// Term is the highest term seen, of any shard: a term marker's
	// sequence, or an event's term extension.
	Term uint64
	// Fenced lists the messages ignored because their term was lower than
	// one seen before them: published by a deposed leader after a newer
	// term began.
	Fenced []string
	// Foreign lists the messages ignored because no term marker backs
	// their term (the term rule, contract §3): not from a bridge.
	Foreign []string
	// Scopes holds, per type, the scope its last begin marker said
	// (contract §1): compare the state with the cluster within it.
	Scopes map[string]Scope
	// Patches counts the updates applied that carried a patch (contract
	// §14).
	Patches int
	// PatchMismatches lists every patch that does not turn the update's
	// oldObject, when sent, or the object held (of the same uid) into its
	// object, and every patch on another event than an update. A reader
	// that missed messages of the object (compaction, §8) holds an older
	// base than the patch's, which shows here too.
	PatchMismatches []string

	subjects contract.Subjects
	terms    map[string]*shardTerm      // shard → its term markers and highest term
	seen     map[string]map[string]bool // type and shard → subjects seen since begin
	open     map[string]string          // type and shard → snapshot id
	lastRV   map[string]string          // type + uid → last applied rv
	deleted  map[string]bool            // type + uid → its deleted event was applied
}

// NewState returns an empty state for a cluster's subjects.
func NewState(subjects contract.Subjects) *State {
	return &State{Objects: map[string]Object{}, Snapshots: map[string]int{}, Changes: map[string]int{}, Scopes: map[string]Scope{}, subjects: subjects,
		terms: map[string]*shardTerm{}, seen: map[string]map[string]bool{}, open: map[string]string{}, lastRV: map[string]string{}, deleted: map[string]bool{}}
}

// ErrUnknownType is returned for a message whose ce-type is not kubebridge's.
var ErrUnknownType = errors.New("replay: unknown event type")

// Apply applies one message.
func (s *State) Apply(m Message) error {
	shard, err := shardOf(m)
	if err != nil {
		return fmt.Errorf("seq %d %s: %w", m.Seq, m.Subject, err)
	}
	// The term rule holds per shard: one shard's terms say nothing about
	// another's events.
	terms := s.termOf(shard)
	if m.Event.Type() == contract.TypeTerm {
		s.Term = max(s.Term, m.Seq)
		terms.highest = max(terms.highest, m.Seq)
		terms.markers.Add(m.Seq)
		return nil
	}
	if ok, err := s.admitTerm(terms, m); !ok {
		return err
	}
	sub, err := s.subjects.Parse(m.Subject)
	if err != nil {
		return fmt.Errorf("seq %d %s: %w", m.Seq, m.Event.Type(), err)
	}
	typ := s.subjects.Type(sub.Type)
	// Each shard's snapshots frame its own objects of the type.
	frame := typ + " " + shard
	switch m.Event.Type() {
	case contract.TypeSnapshotBegin:
		scope, err := scopeOf(m)
		if err != nil {
			return fmt.Errorf("seq %d %s: %w", m.Seq, m.Subject, err)
		}
		s.Scopes[typ] = scope
		s.open[frame] = m.Ext(contract.ExtSnapshotID)
		s.seen[frame] = map[string]bool{}
		return nil
	case contract.TypeSnapshotEnd:
		return s.endSnapshot(typ, shard, frame, m)
	case contract.TypeAdded, contract.TypeUpdated, contract.TypeSnapshotItem, contract.TypeDeleted:
		return s.applyObject(typ, shard, frame, m)
	default:
		return fmt.Errorf("%w: %q", ErrUnknownType, m.Event.Type())
	}
}

// admitTerm applies the term rule to an event of the shard whose term
// markers are terms. It reports whether the event is to be applied; an
// event that is not (foreign, or fenced) is recorded as such, and an
// error is returned only for a term extension that does not parse.
func (s *State) admitTerm(terms *shardTerm, m Message) (bool, error) {
	term, err := contract.TermOf(m.Header)
	if err != nil {
		return false, fmt.Errorf("seq %d %s: %w", m.Seq, m.Subject, err)
	}
	if terms.markers.Foreign(term, m.Seq) {
		s.Foreign = append(s.Foreign, fmt.Sprintf("seq %d %s %s term %d", m.Seq, m.Event.Type(), m.Subject, term))
		return false, nil
	}
	if term < terms.highest {
		s.Fenced = append(s.Fenced, fmt.Sprintf("seq %d %s %s term %d after term %d", m.Seq, m.Event.Type(), m.Subject, term, terms.highest))
		return false, nil
	}
	terms.highest = term
	s.Term = max(s.Term, term)
	return true, nil
}

// endSnapshot closes the snapshot of frame (the type typ on shard) that
// the end marker m ends, sweeping every object of the frame it did not
// see.
func (s *State) endSnapshot(typ, shard, frame string, m Message) error {
	if s.open[frame] != m.Ext(contract.ExtSnapshotID) {
		return fmt.Errorf("replay: end marker of snapshot %s without its begin (open: %q)", m.Ext(contract.ExtSnapshotID), s.open[frame])
	}
	// Objects the bridge could not publish in any form exist: they are
	// listed on the end marker and must not be swept.
	for _, suffix := range strings.Fields(m.Ext(contract.ExtUnpublished)) {
		s.seen[frame][typ+"."+suffix] = true
	}
	for subj, o := range s.Objects {
		if o.Type == typ && o.Shard == shard && !s.seen[frame][subj] {
			s.Swept = append(s.Swept, subj+" "+o.ResourceVersion)
			delete(s.Objects, subj)
		}
	}
	delete(s.open, frame)
	delete(s.seen, frame)
	s.Snapshots[typ]++
	return nil
}

// applyObject applies an added, updated, deleted or snapshot item event
// of an object of the type typ on shard, whose snapshot frame is frame.
func (s *State) applyObject(typ, shard, frame string, m Message) error {
	n, err := m.Coalesced()
	if err != nil {
		return fmt.Errorf("seq %d %s %s: %w", m.Seq, m.Event.Type(), m.Subject, err)
	}
	if m.Event.Type() != contract.TypeSnapshotItem {
		s.Changes[typ] += n
	}
	uid, rv := m.Ext(contract.ExtUID), m.Ext(contract.ExtResourceVersion)
	key := typ + " " + uid
	var prev []byte
	if o, ok := s.Objects[m.Subject]; ok && o.UID == uid {
		prev = o.Data
	}
	s.checkPatch(m, prev)
	newer := s.newerThanLast(key, rv)
	regressed := s.checkRV(key, uid, rv, m)
	if seen := s.seen[frame]; seen != nil {
		seen[m.Subject] = true
	}
	if m.Event.Type() == contract.TypeDeleted {
		s.deleted[key] = true
		if o, ok := s.Objects[m.Subject]; ok && o.UID == uid {
			delete(s.Objects, m.Subject)
		} else {
			// The subject holds a newer object of the same name, or the
			// object was swept already: nothing to remove.
			s.StaleDeletes++
		}
		return nil
	}
	if s.deleted[key] {
		if newer {
			// The object left the type's match (its deleted event) and
			// entered it again (contract §12).
			delete(s.deleted, key)
		} else if !regressed {
			// A uid is never reused: an object that comes back after its
			// delete at no newer version is an older state published too
			// late.
			s.Regressions = append(s.Regressions, fmt.Sprintf("seq %d %s %s uid %s rv %s: after the deleted event of that uid", m.Seq, m.Event.Type(), m.Subject, uid, rv))
		}
	}
	s.Objects[m.Subject] = Object{Type: typ, Subject: m.Subject, UID: uid, ResourceVersion: rv, Data: m.Data, Shard: shard}
	return nil
}

// newerThanLast reports whether rv is newer than the last resourceVersion
// applied for key (the object's type and uid).
func (s *State) newerThanLast(key, rv string) bool {
	prev, ok := s.lastRV[key]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, prev)
	return err == nil && cmp > 0
}

// checkRV records a regression if rv is older than the last
// resourceVersion applied for key (the object's type and uid), and makes
// rv the last. It reports whether it recorded one.
func (s *State) checkRV(key, uid, rv string, m Message) bool {
	regressed := false
	if prev, ok := s.lastRV[key]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && cmp < 0 {
			s.Regressions = append(s.Regressions, fmt.Sprintf("seq %d %s %s uid %s: rv %s after %s", m.Seq, m.Event.Type(), m.Subject, uid, rv, prev))
			regressed = true
		}
	}
	s.lastRV[key] = rv
	return regressed
}

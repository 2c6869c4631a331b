package consume

import (
	"fmt"
	"maps"
)

// ViolationKind names a breach of the stream's contract.
type ViolationKind string

// The checks an Applier (and so a State) makes while it applies events.
const (
	// Regression: an object (a uid of a type) went back to an older
	// resourceVersion, or came back after its deleted event at no newer
	// resourceVersion (newer: it entered the type's match again,
	// contract §12). The event is not applied.
	Regression ViolationKind = "regression"
	// EndWithoutBegin: a snapshot end marker whose begin marker was not
	// the last begin read, although begin markers of its type were read
	// before it. It sweeps nothing.
	EndWithoutBegin ViolationKind = "end-without-begin"
	// DuplicateID: an event id applied before (JetStream de-duplicates
	// by id within its window only). The event is not applied again.
	DuplicateID ViolationKind = "duplicate-id"
	// Undecodable: a message that is not an event of the contract (see
	// DecodeError). It is skipped.
	Undecodable ViolationKind = "undecodable"
	// Foreign: an event whose term no term marker of the cluster backs
	// (a term at or beyond the event's own stream sequence, or one among
	// the markers' sequences that is none of them): published by something
	// other than a bridge of this cluster. It is not applied, and its term
	// counts for nothing.
	Foreign ViolationKind = "foreign"
	// EndSkipped is reported, but is no breach: an end marker read before
	// any begin marker of its type, because reading started after its
	// begin or compaction removed it. It sweeps nothing.
	EndSkipped ViolationKind = "end-skipped"
)

// Breach reports whether the kind breaks the contract (all but EndSkipped).
func (k ViolationKind) Breach() bool { return k != EndSkipped }

// Violation is one finding of the contract checks. A delete of an object
// the reader does not hold is none: it was swept already, or its name holds
// a newer object.
type Violation struct {
	Kind    ViolationKind
	Seq     uint64
	Subject string
	// ID is the event id (ce-id).
	ID string
	// Detail says what was found, e.g. "uid 3f2c… rv 35 after 40".
	Detail string
	// Err is the DecodeError of an Undecodable message.
	Err error
}

func (v *Violation) Error() string {
	return fmt.Sprintf("consume: %s: seq %d %s: %s", v.Kind, v.Seq, v.Subject, v.Detail)
}

func (v *Violation) Unwrap() error { return v.Err }

// Hooks are called, synchronously, from the goroutine that applies
// events. They must not block for long and must not call back into the
// State or Applier that calls them.
type Hooks struct {
	// OnViolation is called for every Violation.
	OnViolation func(Violation)
	// OnFenced is called for every event ignored under the term rule:
	// written by a deposed leader after a newer term began. That is not
	// a violation: fencing works as designed.
	OnFenced func(*Event)
}

// Stats counts what an Applier did.
type Stats struct {
	// LastSeq is the stream sequence of the last message handled.
	LastSeq uint64
	// Term is the highest term seen (a term marker's sequence or an
	// event's term).
	Term uint64
	// Applied counts object events applied.
	Applied uint64
	// Fenced counts events ignored under the term rule.
	Fenced uint64
	// Swept counts objects removed by a snapshot end marker.
	Swept uint64
	// StaleDeletes counts deletes of objects not held (swept before, or
	// their name holds a newer object): no-ops, not violations.
	StaleDeletes uint64
	// Snapshots counts complete snapshots applied (begin to end).
	Snapshots uint64
	// Violations counts Violations by kind.
	Violations map[ViolationKind]uint64
}

func (s Stats) clone() Stats {
	s.Violations = maps.Clone(s.Violations)
	return s
}

// Breaches is the number of violations that break the contract.
func (s Stats) Breaches() uint64 {
	var n uint64
	for k, c := range s.Violations {
		if k.Breach() {
			n += c
		}
	}
	return n
}

package contract

import "slices"

// Terms are the term markers of one cluster and shard that a reader
// knows, by the stream sequences they are stored at: a term is its
// marker's sequence (§3). They are what the term rule needs to judge an
// event by where the stream stores it, whether the reader saw every
// message before it or only some (the last message per subject).
//
// The zero value holds no marker. The bridge's missed-delete scan,
// pkg/consume and the replay tool all judge events with it, so that they
// cannot disagree about which events count.
type Terms struct {
	seqs []uint64 // ascending
}

// Add records a term marker stored at seq.
func (t *Terms) Add(seq uint64) {
	if i, found := slices.BinarySearch(t.seqs, seq); !found {
		t.seqs = slices.Insert(t.seqs, i, seq)
	}
}

// Before is the term in force just before stream sequence seq: the
// sequence of the last marker stored before it, 0 when none is known.
// An event at seq whose term is lower was written by a deposed leader
// after a newer term began.
func (t *Terms) Before(seq uint64) uint64 {
	if i, _ := slices.BinarySearch(t.seqs, seq); i > 0 {
		return t.seqs[i-1]
	}
	return 0
}

// Foreign reports whether no marker backs term, read from an event stored
// at seq. A term is the sequence of its marker, which precedes every event
// of the term, so a term at or beyond the event's own sequence, or one
// within the markers known that is none of them, was written by no bridge
// of this cluster. A term older than every marker known is taken as real:
// its marker went with the stream's oldest messages. Term 0 is an event
// from before terms.
func (t *Terms) Foreign(term, seq uint64) bool {
	switch {
	case term == 0:
		return false
	case term >= seq:
		return true
	case len(t.seqs) == 0 || term < t.seqs[0]:
		return false
	}
	_, found := slices.BinarySearch(t.seqs, term)
	return !found
}

package bridge

// maxSpareStates bounds the object states kept for reuse.
const maxSpareStates = 1024

// newState returns an empty object state, reusing one forgotten earlier:
// most objects come and go from the intake with every change.
func (in *intake) newState() *objectState {
	n := len(in.spare)
	if n == 0 {
		return &objectState{}
	}
	st := in.spare[n-1]
	in.spare[n-1] = nil
	in.spare = in.spare[:n-1]
	return st
}

// forget drops ref's state, keeping it for reuse (its queue's room
// included). Nothing may use st afterwards.
func (in *intake) forget(ref objectRef, st *objectState) {
	delete(in.objects, ref)
	if len(in.spare) < maxSpareStates {
		clear(st.queue[:cap(st.queue)])
		*st = objectState{queue: st.queue[:0]}
		in.spare = append(in.spare, st)
	}
}

// refFIFO is a queue of refs, reusing its backing array.
type refFIFO struct {
	refs []objectRef
	head int
}

func (q *refFIFO) push(r objectRef) { q.refs = append(q.refs, r) }

func (q *refFIFO) pop() (objectRef, bool) {
	if q.head == len(q.refs) {
		q.refs, q.head = q.refs[:0], 0
		return objectRef{}, false
	}
	r := q.refs[q.head]
	q.refs[q.head] = objectRef{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.refs) {
		q.refs = append(q.refs[:0], q.refs[q.head:]...)
		q.head = 0
	}
	return r, true
}

package intake

// refFIFO is the queue of refs whose objects are waiting, reusing its
// backing array.
type refFIFO struct {
	refs []Ref
	head int
}

func (q *refFIFO) push(r Ref) { q.refs = append(q.refs, r) }

func (q *refFIFO) pop() (Ref, bool) {
	if q.head == len(q.refs) {
		q.refs, q.head = q.refs[:0], 0
		return Ref{}, false
	}
	r := q.refs[q.head]
	q.refs[q.head] = Ref{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.refs) {
		q.refs = append(q.refs[:0], q.refs[q.head:]...)
		q.head = 0
	}
	return r, true
}

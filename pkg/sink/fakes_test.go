package sink

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outcome is what laneStream does with one publish attempt.
type outcome struct {
	hold      <-chan struct{} // if set, the ack waits until it is closed
	delay     time.Duration   // then the ack waits this long
	err       error           // the attempt fails with err instead of being stored
	immediate error           // PublishMsgAsync itself returns this error
}

// laneStream is a fake JetStream that checks the publisher's guarantees at
// the moment they could be broken: when an attempt is made. It records a
// violation when a subject gets a second attempt while one is in flight,
// and whatever check reports.
type laneStream struct {
	behave func(m *nats.Msg, attempt int) outcome // called with mu held
	check  func(s *laneStream, id string) string  // called with mu held; "" is fine
	// acks, if set, are told every outcome too, as nats.go tells the
	// handlers a JetStream was made with.
	acks *Acks

	mu         sync.Mutex
	attempts   map[string]int // per Nats-Msg-Id
	stored     []string       // Nats-Msg-Id in store order
	storedSet  map[string]bool
	bySubject  map[string]int // attempts in flight per subject
	total      int            // attempts in flight
	maxTotal   int
	violations []string
}

func newLaneStream(behave func(m *nats.Msg, attempt int) outcome) *laneStream {
	return &laneStream{behave: behave, attempts: map[string]int{}, storedSet: map[string]bool{}, bySubject: map[string]int{}}
}

// holdingStream is a laneStream that stores every message at once except
// those on subject, whose acknowledgements wait until hold is closed.
func holdingStream(subject string, hold <-chan struct{}) *laneStream {
	return newLaneStream(func(m *nats.Msg, _ int) outcome {
		if m.Subject == subject {
			return outcome{hold: hold}
		}
		return outcome{}
	})
}

func (s *laneStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	id := m.Header.Get(jetstream.MsgIDHeader)
	s.mu.Lock()
	s.attempts[id]++
	if s.bySubject[m.Subject] > 0 {
		s.violations = append(s.violations, fmt.Sprintf("%s attempted while another publish on %s is in flight", id, m.Subject))
	}
	if s.check != nil {
		if v := s.check(s, id); v != "" {
			s.violations = append(s.violations, v)
		}
	}
	o := s.behave(m, s.attempts[id])
	if o.immediate != nil {
		s.mu.Unlock()
		return nil, o.immediate
	}
	s.bySubject[m.Subject]++
	s.total++
	s.maxTotal = max(s.maxTotal, s.total)
	s.mu.Unlock()
	f := &future{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: m}
	go func() {
		if o.hold != nil {
			<-o.hold
		}
		if o.delay > 0 {
			time.Sleep(o.delay) // the acknowledgement's latency, as told
		}
		// The books are updated before the result is delivered, so the
		// publisher cannot react to it before they are.
		s.mu.Lock()
		s.bySubject[m.Subject]--
		s.total--
		if o.err == nil {
			s.stored = append(s.stored, id)
			s.storedSet[id] = true
		}
		s.mu.Unlock()
		if o.err != nil {
			f.err <- o.err
			if s.acks != nil {
				s.acks.settle(m, nil, o.err)
			}
			return
		}
		ack := &jetstream.PubAck{Stream: "S"}
		f.ok <- ack
		if s.acks != nil {
			s.acks.settle(m, ack, nil)
		}
	}()
	return f, nil
}

// routed makes s report to Acks, as a JetStream made with their options
// does, and returns the options for a Publisher on s to take them.
func (s *laneStream) routed() Option {
	s.acks = NewAcks()
	s.acks.JetStreamOptions()
	return WithAcks(s.acks)
}

func (s *laneStream) snapshot() (stored []string, violations []string, maxTotal int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stored...), append([]string(nil), s.violations...), s.maxTotal
}

func (s *laneStream) attemptsOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[id]
}

// countingObserver remembers the largest InFlight it was told.
type countingObserver struct {
	maxInFlight atomic.Int64
}

func (o *countingObserver) Acked(*nats.Msg, time.Duration, bool) {}
func (o *countingObserver) Retried(*nats.Msg, error)             {}
func (o *countingObserver) Rejected(*nats.Msg, error)            {}
func (o *countingObserver) InFlight(n int) {
	for {
		cur := o.maxInFlight.Load()
		if int64(n) <= cur || o.maxInFlight.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// doneLog records every Done call by message id.
type doneLog struct {
	mu    sync.Mutex
	calls map[string][]error
}

func newDoneLog() *doneLog { return &doneLog{calls: map[string][]error{}} }

func (d *doneLog) envelope(subject, id string) Envelope {
	return Envelope{Msg: msg(subject, id), Done: func(err error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.calls[id] = append(d.calls[id], err)
	}}
}

// result describes what went wrong if Done was not called exactly once for
// id, and otherwise returns the error it got.
func (d *doneLog) result(id string) (problem string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch c := d.calls[id]; len(c) {
	case 0:
		return "Done not called", nil
	case 1:
		return "", c[0]
	default:
		return fmt.Sprintf("Done called %d times: %v", len(c), c), nil
	}
}

func (d *doneLog) ackedNil(id string) bool {
	problem, err := d.result(id)
	return problem == "" && err == nil
}

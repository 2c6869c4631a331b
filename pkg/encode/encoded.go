package encode

import (
	"bytes"

	"github.com/nats-io/nats.go"
)

// Encoded is one message ready to publish.
type Encoded struct {
	Msg *nats.Msg
	// ID is the event id, also sent as Nats-Msg-Id.
	ID string
	// Truncated is set when the objects did not fit the maximum payload
	// and only their identifying metadata was sent.
	Truncated bool

	// buf holds Msg.Data, m holds Msg, and e is the encoder they go
	// back to.
	buf *bytes.Buffer
	m   *ceMessage
	e   *Encoder
}

// maxPooledBuffer is the largest payload buffer kept for reuse: the rare
// large object's buffer is left to the garbage collector rather than
// held for small events.
const maxPooledBuffer = 256 << 10

// Size is what the message holds in memory: its subject, its payload's
// buffer (its capacity: buffers are sized ahead, so they are larger than
// the payload) and its headers' keys and values; 0 for no message. It is
// what a byte budget on encoded events counts. Headers added to Msg after
// it was encoded are not counted.
func (m Encoded) Size() int64 {
	if m.m == nil {
		return 0
	}
	n := len(m.Msg.Subject) + m.m.lineBytes
	if m.buf != nil {
		n += m.buf.Cap()
	}
	return int64(n)
}

// Release hands the message, its headers and its payload's buffer back to
// the encoder that made them, for a later event to reuse, saving the
// allocations of its headers and one of the event's size. Call it at most
// once, and only when nothing will read Msg again: JetStream stored it, or
// refused it for good. Not calling it is always safe.
func (m Encoded) Release() {
	if m.e == nil {
		return
	}
	if m.buf != nil && m.buf.Cap() <= maxPooledBuffer {
		m.e.buffers.Put(m.buf)
	}
	if m.m != nil {
		m.m.reset()
		m.e.messages.Put(m.m)
	}
}

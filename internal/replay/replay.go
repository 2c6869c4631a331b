package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kubebridge/kubebridge/pkg/encode"
)

// Message is one stored message, decoded.
type Message struct {
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
	Event   *event.Event
}

// Ext returns a string extension of the message's event.
func (m Message) Ext(name string) string {
	v, _ := m.Event.Extensions()[name].(string)
	return v
}

// ReadAll returns every message of stream matching filter (empty: all),
// oldest first, decoded with encode.Decode.
func ReadAll(ctx context.Context, js jetstream.JetStream, stream, filter string) ([]Message, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []Message
	for {
		batch, err := c.FetchNoWait(1000)
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			ev, err := encode.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if err != nil {
				return nil, fmt.Errorf("seq %d: %w", meta.Sequence.Stream, err)
			}
			out = append(out, Message{Seq: meta.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Event: ev})
			if meta.NumPending == 0 {
				return out, batch.Error()
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			// The stream may still be receiving; give it a moment.
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// Object is the consumer's view of one object.
type Object struct {
	Type            string // the type's subject prefix
	Subject         string
	UID             string
	ResourceVersion string
	Data            []byte
}

// State is the reference consumer's state.
type State struct {
	// Objects by subject.
	Objects map[string]Object
	// Regressions lists every message that carried an older
	// resourceVersion for an object than one applied before.
	Regressions []string
	// Swept lists every object removed by a snapshot end marker, as
	// "subject rv".
	Swept []string
	// Snapshots counts completed snapshots per type.
	Snapshots map[string]int

	subjects encode.Subjects
	seen     map[string]map[string]bool // type → subjects seen since begin
	open     map[string]string          // type → snapshot id
	lastRV   map[string]string          // subject → last applied rv
}

// NewState returns an empty state for a cluster's subjects.
func NewState(subjects encode.Subjects) *State {
	return &State{Objects: map[string]Object{}, Snapshots: map[string]int{}, subjects: subjects,
		seen: map[string]map[string]bool{}, open: map[string]string{}, lastRV: map[string]string{}}
}

// ErrUnknownType is returned for a message whose ce-type is not kubebridge's.
var ErrUnknownType = errors.New("replay: unknown event type")

// Apply applies one message.
func (s *State) Apply(m Message) error {
	typ := typePrefix(m.Subject)
	switch m.Event.Type() {
	case encode.TypeSnapshotBegin:
		s.open[typ] = m.Ext(encode.ExtSnapshotID)
		s.seen[typ] = map[string]bool{}
		return nil
	case encode.TypeSnapshotEnd:
		if s.open[typ] != m.Ext(encode.ExtSnapshotID) {
			return fmt.Errorf("replay: end marker of snapshot %s without its begin (open: %q)", m.Ext(encode.ExtSnapshotID), s.open[typ])
		}
		for subj, o := range s.Objects {
			if o.Type == typ && !s.seen[typ][subj] {
				s.Swept = append(s.Swept, subj+" "+o.ResourceVersion)
				delete(s.Objects, subj)
			}
		}
		delete(s.open, typ)
		delete(s.seen, typ)
		s.Snapshots[typ]++
		return nil
	case encode.TypeAdded, encode.TypeUpdated, encode.TypeSnapshotItem, encode.TypeDeleted:
	default:
		return fmt.Errorf("%w: %q", ErrUnknownType, m.Event.Type())
	}
	rv := m.Ext(encode.ExtResourceVersion)
	if prev, ok := s.lastRV[m.Subject]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && cmp < 0 {
			s.Regressions = append(s.Regressions, fmt.Sprintf("seq %d %s %s: rv %s after %s", m.Seq, m.Event.Type(), m.Subject, rv, prev))
		}
	}
	s.lastRV[m.Subject] = rv
	if seen := s.seen[typ]; seen != nil {
		seen[m.Subject] = true
	}
	if m.Event.Type() == encode.TypeDeleted {
		delete(s.Objects, m.Subject)
		return nil
	}
	s.Objects[m.Subject] = Object{Type: typ, Subject: m.Subject, UID: m.Ext(encode.ExtUID), ResourceVersion: rv, Data: m.Data}
	return nil
}

// typePrefix strips the last two tokens (namespace and name, or the
// snapshot marker's) from a subject.
func typePrefix(subject string) string {
	dots := 0
	for i := len(subject) - 1; i >= 0; i-- {
		if subject[i] == '.' {
			dots++
			if dots == 2 {
				return subject[:i]
			}
		}
	}
	return subject
}

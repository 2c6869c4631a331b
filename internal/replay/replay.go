package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ExtCoalesced is the extension of an event that stands for several
// changes of one object merged while they waited: on added, updated and
// deleted events the number of changes (an integer ≥ 2; absent means
// one); on a snapshot item the number of live changes it superseded (≥ 1;
// absent means none). It is spelled out here rather than taken from
// pkg/encode so the reference consumer follows the contract, not the
// producer's code.
const ExtCoalesced = "coalesced"

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

// Coalesced returns the coalesced extension: for an added, updated or
// deleted event the number of changes it stands for (1 without the
// extension), for a snapshot item the number of live changes it
// superseded (0 without it). It fails for a value the contract does not
// allow: not an integer, below 2 on a live event, below 1 on an item.
func (m Message) Coalesced() (int, error) {
	least, absent := 2, 1
	if m.Event.Type() == contract.TypeSnapshotItem {
		// An item is no change of its own; superseding a single pending
		// change is worth saying.
		least, absent = 1, 0
	}
	v, ok := m.Event.Extensions()[ExtCoalesced]
	if !ok {
		return absent, nil
	}
	n, err := types.ToInteger(v)
	if err != nil {
		return 0, fmt.Errorf("replay: %s extension %v: %w", ExtCoalesced, v, err)
	}
	if int(n) < least {
		return 0, fmt.Errorf("replay: %s extension %d on %s: must be at least %d when present", ExtCoalesced, n, m.Event.Type(), least)
	}
	return int(n), nil
}

// ReadAll returns every message of stream matching filter (empty: all),
// oldest first, decoded with cenats.Decode. Messages that are no
// CloudEvents at all are left out, as consumers skip them.
func ReadAll(ctx context.Context, js jetstream.JetStream, stream, filter string) ([]Message, error) {
	var out []Message
	err := ForEach(ctx, js, stream, filter, func(m Message) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ForEach calls f for every message of stream matching filter (empty:
// all), oldest first, decoded with cenats.Decode, without holding them
// all in memory. It stops at the first message after which none is
// pending. An error from f ends the read and is returned.
func ForEach(ctx context.Context, js jetstream.JetStream, stream, filter string, f func(Message) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return err
	}
	for {
		batch, err := c.FetchNoWait(1000)
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			ev, err := cenats.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			switch {
			case errors.Is(err, cenats.ErrNotCloudEvent):
				// Foreign: no event of the contract, as a consumer skips it.
			case err != nil:
				return fmt.Errorf("seq %d: %w", meta.Sequence.Stream, err)
			default:
				if err := f(Message{Seq: meta.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Event: ev}); err != nil {
					return err
				}
			}
			if meta.NumPending == 0 {
				return batch.Error()
			}
		}
		if err := batch.Error(); err != nil {
			return err
		}
		if n == 0 {
			// The stream may still be receiving; give it a moment.
			select {
			case <-ctx.Done():
				return ctx.Err()
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

	subjects contract.Subjects
	terms    map[string]*shardTerm      // shard → its term markers and highest term
	seen     map[string]map[string]bool // type and shard → subjects seen since begin
	open     map[string]string          // type and shard → snapshot id
	lastRV   map[string]string          // type + uid → last applied rv
	deleted  map[string]bool            // type + uid → its deleted event was applied
}

// NewState returns an empty state for a cluster's subjects.
func NewState(subjects contract.Subjects) *State {
	return &State{Objects: map[string]Object{}, Snapshots: map[string]int{}, Changes: map[string]int{}, subjects: subjects,
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
		terms.markers = append(terms.markers, m.Seq)
		return nil
	}
	term, err := contract.TermOf(m.Header)
	if err != nil {
		return fmt.Errorf("seq %d %s: %w", m.Seq, m.Subject, err)
	}
	// A term is the sequence of its marker, which comes before the term's
	// events; a term older than the first marker read is taken as real.
	if term != 0 && (term >= m.Seq || (len(terms.markers) > 0 && term >= terms.markers[0] && !slices.Contains(terms.markers, term))) {
		s.Foreign = append(s.Foreign, fmt.Sprintf("seq %d %s %s term %d", m.Seq, m.Event.Type(), m.Subject, term))
		return nil
	}
	if term < terms.highest {
		s.Fenced = append(s.Fenced, fmt.Sprintf("seq %d %s %s term %d after term %d", m.Seq, m.Event.Type(), m.Subject, term, terms.highest))
		return nil
	}
	terms.highest = term
	s.Term = max(s.Term, term)
	sub, err := s.subjects.Parse(m.Subject)
	if err != nil {
		return fmt.Errorf("seq %d %s: %w", m.Seq, m.Event.Type(), err)
	}
	typ := s.subjects.Type(sub.Type)
	// Each shard's snapshots frame its own objects of the type.
	frame := typ + " " + shard
	switch m.Event.Type() {
	case contract.TypeSnapshotBegin:
		s.open[frame] = m.Ext(contract.ExtSnapshotID)
		s.seen[frame] = map[string]bool{}
		return nil
	case contract.TypeSnapshotEnd:
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
	case contract.TypeAdded, contract.TypeUpdated, contract.TypeSnapshotItem, contract.TypeDeleted:
	default:
		return fmt.Errorf("%w: %q", ErrUnknownType, m.Event.Type())
	}
	n, err := m.Coalesced()
	if err != nil {
		return fmt.Errorf("seq %d %s %s: %w", m.Seq, m.Event.Type(), m.Subject, err)
	}
	if m.Event.Type() != contract.TypeSnapshotItem {
		s.Changes[typ] += n
	}
	uid, rv := m.Ext(contract.ExtUID), m.Ext(contract.ExtResourceVersion)
	key := typ + " " + uid
	if prev, ok := s.lastRV[key]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && cmp < 0 {
			s.Regressions = append(s.Regressions, fmt.Sprintf("seq %d %s %s uid %s: rv %s after %s", m.Seq, m.Event.Type(), m.Subject, uid, rv, prev))
		}
	}
	s.lastRV[key] = rv
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
		// A uid is never reused: an object that comes back after its
		// delete is an older state published too late.
		s.Regressions = append(s.Regressions, fmt.Sprintf("seq %d %s %s uid %s rv %s: after the deleted event of that uid", m.Seq, m.Event.Type(), m.Subject, uid, rv))
	}
	s.Objects[m.Subject] = Object{Type: typ, Subject: m.Subject, UID: uid, ResourceVersion: rv, Data: m.Data, Shard: shard}
	return nil
}

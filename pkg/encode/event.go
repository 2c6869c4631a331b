package encode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var typeByVerb = map[informers.Verb]string{
	informers.Added:         contract.TypeAdded,
	informers.Updated:       contract.TypeUpdated,
	informers.Deleted:       contract.TypeDeleted,
	informers.SnapshotBegin: contract.TypeSnapshotBegin,
	informers.SnapshotItem:  contract.TypeSnapshotItem,
	informers.SnapshotEnd:   contract.TypeSnapshotEnd,
}

// ErrTooLarge is returned when not even the truncated form of an event fits
// the maximum payload.
var ErrTooLarge = errors.New("encode: event exceeds the maximum NATS payload even without its data")

// Encoder turns Changes into NATS messages. It is safe for concurrent use.
type Encoder struct {
	// Subjects names the subjects; its Shard, when it is one of several,
	// is the shard extension of every event and marker, and makes the
	// markers' and the term marker's subjects that shard's.
	Subjects contract.Subjects
	// TombstoneTTL, when positive, is sent as Nats-TTL on deleted events
	// (in whole seconds, rounded up), so the stream removes a delete after
	// it and a deleted object does not hold its subject forever. The stream
	// must allow message TTLs, or it refuses these events.
	TombstoneTTL time.Duration
	// TombstoneRollup sends Nats-Rollup: sub on deleted events: the stream
	// purges the object's earlier messages when it stores the delete, so
	// the delete is the subject's only message and its expiry leaves the
	// subject empty rather than uncovering an older state of a deleted
	// object. The stream must allow roll-ups, or it refuses these events.
	TombstoneRollup bool
	// Term, when not zero, is sent as the term extension of every object
	// event and snapshot marker: the stream sequence of the term marker
	// this bridge wrote when it started to lead (TermMarker). Consumers
	// ignore an event whose term is lower than one they have already
	// seen: it comes from a deposed leader. Set it before the first call.
	Term uint64
	// Updates says, per type, what an update's data carries besides the
	// object (the type's rules); a type it does not name gets the old
	// object only. Set it before the first call.
	Updates map[*informers.Resource]UpdateData

	lastObjectSize atomic.Int64
	// buffers holds payload buffers handed back with Encoded.Release,
	// and messages the messages (header maps included).
	buffers  sync.Pool
	messages sync.Pool
}

// UpdateData is what an update's data carries besides the object.
type UpdateData struct {
	// Patch adds "patch": the RFC 6902 JSON Patch that turns the old
	// object into the object (contract §5).
	Patch bool
	// OmitOldObject leaves "oldObject" out; meant with Patch.
	OmitOldObject bool
}

// EncodeWithin builds the NATS message for c within maxPayload bytes
// (0: no limit), for callers whose limit changes, e.g. on reconnect.
func (e *Encoder) EncodeWithin(c informers.Change, maxPayload int) (Encoded, error) {
	enc, err := e.message(c, false)
	if err != nil {
		return Encoded{}, err
	}
	if maxPayload <= 0 || enc.m.wireSize() <= maxPayload || c.Verb.IsMarker() {
		return enc, nil
	}
	enc.Release()
	return e.EncodeTruncated(c, maxPayload)
}

// EncodeTruncated builds the message for c without the objects' content
// (only apiVersion, kind and identifying metadata, truncated=true), for an
// event JetStream refused in full.
func (e *Encoder) EncodeTruncated(c informers.Change, maxPayload int) (Encoded, error) {
	enc, err := e.message(c, true)
	if err != nil {
		return Encoded{}, err
	}
	if size := enc.m.wireSize(); maxPayload > 0 && size > maxPayload {
		err := fmt.Errorf("%w: %s (%d bytes, limit %d)", ErrTooLarge, enc.Msg.Subject, size, maxPayload)
		enc.Release()
		return Encoded{}, err
	}
	enc.Truncated = !c.Verb.IsMarker()
	return enc, nil
}

// buffer returns an empty payload buffer: one handed back if there is one
// (grown as it is written, if it must), else a new one with room for the
// size sizeHint guesses.
func (e *Encoder) buffer(c informers.Change) *bytes.Buffer {
	if buf, ok := e.buffers.Get().(*bytes.Buffer); ok {
		buf.Reset()
		return buf
	}
	buf := new(bytes.Buffer)
	buf.Grow(e.sizeHint(c))
	return buf
}

// sizeHint guesses the payload size from the last one, so the buffer is
// usually allocated once.
func (e *Encoder) sizeHint(c informers.Change) int {
	n := int(e.lastObjectSize.Load())*5/4 + 64
	if c.OldObject != nil {
		n *= 2
	}
	return n
}

// message builds c's message.
func (e *Encoder) message(c informers.Change, truncate bool) (Encoded, error) {
	typ, ok := typeByVerb[c.Verb]
	if !ok {
		return Encoded{}, fmt.Errorf("encode: unknown verb %q", c.Verb)
	}
	if c.Resource == nil {
		return Encoded{}, errors.New("encode: change without a resource")
	}
	apiVersion := c.Resource.GVR.GroupVersion().String()
	term := ""
	if e.Term != 0 {
		term = strconv.FormatUint(e.Term, 10)
	}
	if c.Verb.IsMarker() {
		return e.marker(c, typ, apiVersion, term), nil
	}
	return e.object(c, typ, apiVersion, term, truncate)
}

// marker builds a snapshot marker's message, which has no data.
func (e *Encoder) marker(c informers.Change, typ, apiVersion, term string) Encoded {
	r := c.Resource
	id := r.String() + "/" + c.SnapshotID + "/" + string(c.Verb)
	m := e.newMessage(typ, id, source(e.Subjects.Cluster, r, ""), formatTime(c.ObservedAt))
	e.setCommon(m, r.Kind, apiVersion, term)
	m.set(hSnapshotID, c.SnapshotID)
	subject := e.Subjects.SnapshotBegin(r.Type())
	switch c.Verb {
	case informers.SnapshotBegin:
		setScope(m, r, c.Scope)
	case informers.SnapshotEnd:
		m.setInt(hSnapshotCount, int(int32(c.SnapshotCount)))
		if len(c.SnapshotUnpublished) > 0 {
			m.set(hUnpublished, e.Subjects.ObjectSuffixes(c.SnapshotUnpublished))
		}
		subject = e.Subjects.SnapshotEnd(r.Type())
	}
	return Encoded{Msg: e.msg(m, subject, msgID(e.Subjects.Cluster, id), false, nil), ID: id, m: m, e: e}
}

// object builds an object event's message: its data holds the object, and
// the old object when there is one.
func (e *Encoder) object(c informers.Change, typ, apiVersion, term string, truncate bool) (Encoded, error) {
	r := c.Resource
	obj, err := meta.Accessor(c.Object)
	if err != nil {
		return Encoded{}, fmt.Errorf("encode: %s object: %w", r, err)
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	uid, rv := string(obj.GetUID()), obj.GetResourceVersion()
	text := e.objectText(c, ns, name, uid, rv, term)
	id := text.id

	// The payload is assembled by hand, streaming each object into one
	// buffer: marshalling a struct of json.RawMessage would scan both
	// objects again, and json.Marshal would copy each of them once more.
	buf := e.buffer(c)
	if err = e.writeData(buf, c, apiVersion, truncate); err != nil {
		e.buffers.Put(buf)
		return Encoded{}, fmt.Errorf("encode: %s %s: %w", r, id, err)
	}
	payload := buf.Bytes()

	m := e.newMessage(typ, id, text.source, text.time)
	e.setCommon(m, r.Kind, apiVersion, term)
	if c.Verb == informers.SnapshotItem {
		m.set(hSnapshotID, c.SnapshotID)
	}
	m.set(hSubject, text.subject)
	if ns != "" {
		m.set(hNamespace, ns)
	}
	m.set(hName, name)
	m.set(hUID, uid)
	m.set(hResourceVersion, rv)
	if c.FinalStateUnknown {
		m.setTrue(hFinalState)
	}
	if c.Coalesced > 0 {
		m.setInt(hCoalesced, int(int32(c.Coalesced)))
	}
	if truncate {
		m.setTrue(hTruncated)
	}
	m.jsonData()
	msg := e.msg(m, e.Subjects.Object(r.Type(), ns, name), text.msgID, c.Verb == informers.Deleted, payload)
	return Encoded{Msg: msg, ID: id, buf: buf, m: m, e: e}, nil
}

// setCommon sets the extensions every object event and marker carries.
func (e *Encoder) setCommon(m *ceMessage, kind, apiVersion, term string) {
	m.set(hCluster, e.Subjects.Cluster)
	m.set(hKind, kind)
	m.set(hAPIVersion, apiVersion)
	if term != "" {
		m.set(hTerm, term)
	}
	e.setShard(m)
}

// setShard names the encoder's shard on m, when it is one of several.
func (e *Encoder) setShard(m *ceMessage) {
	if e.Subjects.Shard.Sharded() {
		m.set(hShard, e.Subjects.Shard.String())
	}
}

// setScope stamps the scope a type is watched with on its begin marker.
// Namespaces do not narrow a cluster-scoped type.
func setScope(m *ceMessage, r *informers.Resource, scope informers.Scope) {
	if r.Namespaced && len(scope.Namespaces) > 0 {
		m.set(hScopeNamespaces, strings.Join(scope.Namespaces, ","))
	}
	if scope.LabelSelector != "" {
		m.set(hScopeLabels, scope.LabelSelector)
	}
	if scope.FieldSelector != "" {
		m.set(hScopeFields, scope.FieldSelector)
	}
	if scope.Match != "" {
		// A header holds one line; CEL reads a line break as a space.
		m.set(hScopeMatch, strings.NewReplacer("\r", " ", "\n", " ").Replace(scope.Match))
	}
	if len(scope.IgnoreFields) > 0 {
		// Paths of strings always marshal.
		paths, _ := json.Marshal(scope.IgnoreFields)
		m.set(hScopeIgnore, string(paths))
	}
}

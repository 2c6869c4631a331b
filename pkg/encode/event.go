package encode

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
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

	lastObjectSize atomic.Int64
}

// Encoded is one message ready to publish.
type Encoded struct {
	Msg *nats.Msg
	// ID is the event id, also sent as Nats-Msg-Id.
	ID string
	// Truncated is set when the objects did not fit the maximum payload
	// and only their identifying metadata was sent.
	Truncated bool
}

// Event builds the CloudEvent for c. It never modifies c's objects.
func (e *Encoder) Event(c informers.Change) (event.Event, error) {
	ev, _, err := e.event(c, false)
	return ev, err
}

// EncodeWithin builds the NATS message for c within maxPayload bytes
// (0: no limit), for callers whose limit changes, e.g. on reconnect.
func (e *Encoder) EncodeWithin(c informers.Change, maxPayload int) (Encoded, error) {
	ev, subject, err := e.event(c, false)
	if err != nil {
		return Encoded{}, err
	}
	msg, err := e.toMsg(&ev, subject)
	if err != nil {
		return Encoded{}, err
	}
	if maxPayload <= 0 || wireSize(msg) <= maxPayload || c.Verb.IsMarker() {
		return Encoded{Msg: msg, ID: ev.ID()}, nil
	}
	return e.EncodeTruncated(c, maxPayload)
}

// EncodeTruncated builds the message for c without the objects' content
// (only apiVersion, kind and identifying metadata, truncated=true), for an
// event JetStream refused in full.
func (e *Encoder) EncodeTruncated(c informers.Change, maxPayload int) (Encoded, error) {
	ev, subject, err := e.event(c, true)
	if err != nil {
		return Encoded{}, err
	}
	msg, err := e.toMsg(&ev, subject)
	if err != nil {
		return Encoded{}, err
	}
	if maxPayload > 0 && wireSize(msg) > maxPayload {
		return Encoded{}, fmt.Errorf("%w: %s (%d bytes, limit %d)", ErrTooLarge, subject, wireSize(msg), maxPayload)
	}
	return Encoded{Msg: msg, ID: ev.ID(), Truncated: !c.Verb.IsMarker()}, nil
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

func (e *Encoder) event(c informers.Change, truncate bool) (event.Event, string, error) {
	typ, ok := typeByVerb[c.Verb]
	if !ok {
		return event.Event{}, "", fmt.Errorf("encode: unknown verb %q", c.Verb)
	}
	if c.Resource == nil {
		return event.Event{}, "", errors.New("encode: change without a resource")
	}
	r := c.Resource
	gvk := r.GroupVersionKind()
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetType(typ)
	ev.SetTime(c.ObservedAt)
	ev.SetExtension(contract.ExtCluster, e.Subjects.Cluster)
	ev.SetExtension(contract.ExtKind, gvk.Kind)
	ev.SetExtension(contract.ExtAPIVersion, gvk.GroupVersion().String())
	if e.Term != 0 {
		ev.SetExtension(contract.ExtTerm, strconv.FormatUint(e.Term, 10))
	}

	if c.Verb.IsMarker() {
		ev.SetSource(source(e.Subjects.Cluster, r, ""))
		ev.SetID(r.String() + "/" + c.SnapshotID + "/" + string(c.Verb))
		ev.SetExtension(contract.ExtSnapshotID, c.SnapshotID)
		if c.Verb == informers.SnapshotBegin {
			setScope(&ev, r, c.Scope)
		}
		if c.Verb == informers.SnapshotEnd {
			ev.SetExtension(contract.ExtSnapshotCount, int32(c.SnapshotCount))
			if len(c.SnapshotUnpublished) > 0 {
				ev.SetExtension(contract.ExtUnpublished, e.Subjects.ObjectSuffixes(c.SnapshotUnpublished))
			}
		}
		if c.Verb == informers.SnapshotEnd {
			return ev, e.Subjects.SnapshotEnd(r.Type()), nil
		}
		return ev, e.Subjects.SnapshotBegin(r.Type()), nil
	}

	obj, err := meta.Accessor(c.Object)
	if err != nil {
		return event.Event{}, "", fmt.Errorf("encode: %s object: %w", r, err)
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	// The resource is part of the id: one object served under two
	// resources (HPA v1 and v2, a CRD at two versions) is two event
	// streams, and JetStream must not drop one as a duplicate of the other.
	id := r.String() + "/" + string(obj.GetUID()) + "/" + obj.GetResourceVersion() + "/" + string(c.Verb)
	if c.Verb == informers.SnapshotItem {
		id += "/" + c.SnapshotID
		ev.SetExtension(contract.ExtSnapshotID, c.SnapshotID)
	} else if e.Term != 0 {
		// A change a deposed leader stored late, which consumers ignore,
		// must not make JetStream drop the same change from the new
		// leader as a duplicate: the term is part of the id. (A snapshot
		// id is unique to its term already.)
		id += "/" + strconv.FormatUint(e.Term, 10)
	}
	ev.SetID(id)
	ev.SetSource(source(e.Subjects.Cluster, r, ns))
	if ns != "" {
		ev.SetSubject(ns + "/" + name)
		ev.SetExtension(contract.ExtNamespace, ns)
	} else {
		ev.SetSubject(name)
	}
	ev.SetExtension(contract.ExtName, name)
	ev.SetExtension(contract.ExtUID, string(obj.GetUID()))
	ev.SetExtension(contract.ExtResourceVersion, obj.GetResourceVersion())
	if c.FinalStateUnknown {
		ev.SetExtension(contract.ExtFinalStateUnknown, true)
	}
	if c.Coalesced > 0 {
		ev.SetExtension(contract.ExtCoalesced, int32(c.Coalesced))
	}

	apiVersion := gvk.GroupVersion().String()
	// The payload is assembled by hand, streaming each object into one
	// buffer: marshalling a struct of json.RawMessage would scan both
	// objects again, and json.Marshal would copy each of them once more.
	var buf bytes.Buffer
	buf.Grow(e.sizeHint(c))
	buf.WriteString(`{"object":`)
	if err = writeObject(&buf, c.Object, apiVersion, gvk.Kind, truncate); err != nil {
		return event.Event{}, "", fmt.Errorf("encode: %s %s: %w", r, id, err)
	}
	if c.OldObject != nil {
		buf.WriteString(`,"oldObject":`)
		if err = writeObject(&buf, c.OldObject, apiVersion, gvk.Kind, truncate); err != nil {
			return event.Event{}, "", fmt.Errorf("encode: %s %s old object: %w", r, id, err)
		}
	}
	buf.WriteByte('}')
	payload := buf.Bytes()
	objects := int64(1)
	if c.OldObject != nil {
		objects = 2
	}
	e.lastObjectSize.Store(int64(len(payload)) / objects)
	if truncate {
		ev.SetExtension(contract.ExtTruncated, true)
	}
	ev.SetDataContentType(contract.ContentTypeJSON)
	ev.DataEncoded = payload
	return ev, e.Subjects.Object(r.Type(), ns, name), nil
}

// source is the cluster plus the API path of the collection the object is
// listed from, e.g. k8s://prod/apis/apps/v1/namespaces/web/deployments.
func source(cluster string, r *informers.Resource, namespace string) string {
	path := "/api/" + r.GVR.Version
	if r.GVR.Group != "" {
		path = "/apis/" + r.GVR.Group + "/" + r.GVR.Version
	}
	if namespace != "" {
		path += "/namespaces/" + namespace
	}
	return "k8s://" + cluster + path + "/" + r.GVR.Resource
}

// setScope stamps the scope a type is watched with on its begin marker.
// Namespaces do not narrow a cluster-scoped type.
func setScope(ev *event.Event, r *informers.Resource, scope informers.Scope) {
	if r.Namespaced && len(scope.Namespaces) > 0 {
		ev.SetExtension(contract.ExtScopeNamespaces, strings.Join(scope.Namespaces, ","))
	}
	if scope.LabelSelector != "" {
		ev.SetExtension(contract.ExtScopeLabels, scope.LabelSelector)
	}
	if scope.FieldSelector != "" {
		ev.SetExtension(contract.ExtScopeFields, scope.FieldSelector)
	}
}

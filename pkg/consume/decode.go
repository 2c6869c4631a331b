package consume

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unique"

	"github.com/cloudevents/sdk-go/v2/types"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ErrUndecodable is wrapped by every DecodeError.
var ErrUndecodable = errors.New("consume: undecodable event")

// DecodeError is a message that is not an event of the contract: not a
// CloudEvent, an unknown type, a subject of the wrong shape, an extension
// or object that does not parse, or an object that contradicts its
// subject or extensions.
type DecodeError struct {
	Seq     uint64
	Subject string
	Err     error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("consume: seq %d %s: %v", e.Seq, e.Subject, e.Err)
}

func (e *DecodeError) Unwrap() []error { return []error{ErrUndecodable, e.Err} }

// decoder turns stream messages into Events. It is safe for concurrent use.
type decoder struct {
	subjects contract.Subjects
	scheme   *runtime.Scheme
}

func newDecoder(subjects contract.Subjects, scheme *runtime.Scheme) *decoder {
	// The universal deserializer neither converts nor defaults: the object
	// is what the bridge published, in its own version.
	return &decoder{subjects: subjects, scheme: scheme}
}

func (d *decoder) decode(seq uint64, msg *nats.Msg) (*Event, error) {
	if msg.Header.Get(contract.HeaderType) == contract.TypeTerm {
		// Before anything else: what follows a marker of an unknown major
		// version may not mean what this reader takes it to.
		if err := checkContract(seq, msg.Header); err != nil {
			return nil, err
		}
	}
	ev, err := d.decodeEvent(seq, msg)
	if err != nil {
		return nil, &DecodeError{Seq: seq, Subject: msg.Subject, Err: err}
	}
	return ev, nil
}

func (d *decoder) decodeEvent(seq uint64, msg *nats.Msg) (*Event, error) {
	ce, err := cenats.Decode(msg)
	if err != nil {
		return nil, err
	}
	verb, ok := verbByType[ce.Type()]
	if !ok {
		return nil, fmt.Errorf("unknown event type %q", ce.Type())
	}
	ev := &Event{CloudEvent: *ce, Seq: seq, Subject: msg.Subject, Verb: verb}
	// sdk-go hands out a copy of the extensions at every call: one.
	exts := ev.CloudEvent.Extensions()
	ext := stringExts(exts)
	if ev.Shard, err = shardOf(ext); err != nil {
		return nil, err
	}
	if verb == Term {
		sub, err := d.subjects.Parse(msg.Subject)
		if err != nil || sub.Kind != contract.TermSubject {
			return nil, fmt.Errorf("term marker on %s, not on a term subject (%s)", msg.Subject, strings.Join(d.subjects.Terms(), " or "))
		}
		if sub.Shard != ev.Shard {
			return nil, fmt.Errorf("term marker of shard %s on the term subject of shard %s", ev.Shard, sub.Shard)
		}
		return ev, nil
	}
	if ev.Term, err = contract.TermOf(msg.Header); err != nil {
		return nil, err
	}
	if err := d.parseSubject(ev); err != nil {
		return nil, err
	}
	ev.SnapshotID = ext(contract.ExtSnapshotID)
	if verb.IsMarker() {
		if ev.SnapshotID == "" {
			return nil, fmt.Errorf("%s marker without %s", verb, contract.ExtSnapshotID)
		}
		if verb == SnapshotEnd {
			return ev, d.parseEnd(ev, ext)
		}
		ev.Scope, err = scopeOf(ext)
		return ev, err
	}
	if verb == SnapshotItem && ev.SnapshotID == "" {
		return nil, fmt.Errorf("snapshot item without %s", contract.ExtSnapshotID)
	}
	if err := parseFlags(ev, exts); err != nil {
		return nil, err
	}
	return ev, d.decodeObjects(ev, ext)
}

// stringExts reads string extensions: sdk-go decodes every header
// extension as a string.
func stringExts(exts map[string]any) func(string) string {
	return func(name string) string {
		s, _ := exts[name].(string)
		return s
	}
}

// parseSubject fills in the type, namespace and name from the subject,
// whose kind must fit the verb.
func (d *decoder) parseSubject(ev *Event) error {
	sub, err := d.subjects.Parse(ev.Subject)
	if err != nil {
		return err
	}
	want := contract.ObjectSubject
	switch ev.Verb {
	case SnapshotBegin:
		want = contract.BeginSubject
	case SnapshotEnd:
		want = contract.EndSubject
	}
	if sub.Kind != want {
		return fmt.Errorf("%s event on %s, which is a %s subject", ev.Verb, ev.Subject, sub.Kind)
	}
	if want != contract.ObjectSubject && sub.Shard != ev.Shard {
		return fmt.Errorf("%s marker of shard %s on the marker subject of shard %s", ev.Verb, ev.Shard, sub.Shard)
	}
	ev.Resource = schema.GroupVersionResource{Group: sub.Group, Version: sub.Version, Resource: sub.Resource}
	ev.Namespace, ev.Name = sub.Namespace, sub.Name
	return nil
}

// parseFlags reads the boolean and counting extensions of an object event.
func parseFlags(ev *Event, exts map[string]any) error {
	for name, dst := range map[string]*bool{contract.ExtFinalStateUnknown: &ev.FinalStateUnknown, contract.ExtTruncated: &ev.Truncated} {
		if v, ok := exts[name]; ok {
			b, err := types.ToBool(v)
			if err != nil {
				return fmt.Errorf("%s %v: %w", name, v, err)
			}
			*dst = b
		}
	}
	v, ok := exts[contract.ExtCoalesced]
	if !ok {
		return nil
	}
	n, err := types.ToInteger(v)
	if err != nil {
		return fmt.Errorf("%s %v: %w", contract.ExtCoalesced, v, err)
	}
	// Merged live changes are two or more; an item supersedes one or more.
	least := int32(2)
	if ev.Verb == SnapshotItem {
		least = 1
	}
	if n < least {
		return fmt.Errorf("%s %d on %s: must be at least %d when present", contract.ExtCoalesced, n, ev.Verb, least)
	}
	ev.Coalesced = int(n)
	return nil
}

// decodeObjects decodes the data into typed or unstructured objects and
// checks them against the subject and the extensions.
func (d *decoder) decodeObjects(ev *Event, ext func(string) string) error {
	// The objects keep these in their TypeMeta: a header value is a
	// piece of the message's whole header block (nats.go reads it as one
	// string), which the cache would keep alive with every object.
	gvk := schema.FromAPIVersionAndKind(unique.Make(ext(contract.ExtAPIVersion)).Value(), unique.Make(ext(contract.ExtKind)).Value())
	var err error
	if !gvk.Empty() && d.scheme.Recognizes(gvk) {
		err = d.decodeTyped(ev, gvk)
	} else {
		err = d.decodeUnstructured(ev)
	}
	if err != nil {
		return err
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Errorf("object: %w", err)
	}
	if m.GetNamespace() != ev.Namespace || m.GetName() != ev.Name {
		return fmt.Errorf("object %s/%s on the subject of %s", m.GetNamespace(), m.GetName(), ev.Key())
	}
	ev.UID, ev.ResourceVersion = m.GetUID(), m.GetResourceVersion()
	if ev.UID == "" {
		return errors.New("object without a uid")
	}
	if u := ext(contract.ExtUID); u != "" && k8stypes.UID(u) != ev.UID {
		return fmt.Errorf("%s %s but the object's uid is %s", contract.ExtUID, u, ev.UID)
	}
	if rv := ext(contract.ExtResourceVersion); rv != "" && rv != ev.ResourceVersion {
		return fmt.Errorf("%s %s but the object's resourceVersion is %s", contract.ExtResourceVersion, rv, ev.ResourceVersion)
	}
	return nil
}

// typedData is the payload decoded straight into the objects' Go types:
// one pass over the data, instead of one to split it and one per object.
type typedData struct {
	Object    any             `json:"object"`
	OldObject any             `json:"oldObject"`
	Patch     json.RawMessage `json:"patch"`
}

// typedJSON is how decodeTyped reads the data: JSON v2 (the Go team's
// go-json-experiment, encoding/json/v2 to be) decoded a ConfigMap event
// 2.7 times as fast as encoding/json, with half the allocations; a
// bootstrap is bound by it. Field names match exactly, as in
// Kubernetes' own decoding; duplicate names and invalid UTF-8 are let
// through, as encoding/json does.
var typedJSON = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeTyped decodes the objects into the Go type the scheme has for gvk.
func (d *decoder) decodeTyped(ev *Event, gvk schema.GroupVersionKind) error {
	obj, err := d.scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("object: %w", err)
	}
	w := typedData{Object: obj}
	var old runtime.Object
	if ev.Verb == Updated {
		if old, err = d.scheme.New(gvk); err != nil {
			return fmt.Errorf("oldObject: %w", err)
		}
		w.OldObject = old
	}
	if err := jsonv2.Unmarshal(ev.CloudEvent.Data(), &w, typedJSON); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if w.Object == nil {
		return fmt.Errorf("%s event without an object", ev.Verb)
	}
	if ev.Patch, err = patchOf(ev.Verb, w.Patch); err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	ev.Object = obj
	if old != nil && w.OldObject != nil {
		// Left empty when the data has no oldObject: then there is none.
		if m, err := meta.Accessor(old); err == nil && m.GetUID() != "" {
			old.GetObjectKind().SetGroupVersionKind(gvk)
			ev.OldObject = old
		}
	}
	return nil
}

// decodeUnstructured decodes the objects of a kind the scheme does not
// know.
func (d *decoder) decodeUnstructured(ev *Event) error {
	var data contract.Data
	if err := json.Unmarshal(ev.CloudEvent.Data(), &data); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if len(data.Object) == 0 {
		return fmt.Errorf("%s event without an object", ev.Verb)
	}
	var err error
	if ev.Patch, err = patchOf(ev.Verb, json.RawMessage(data.Patch)); err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data.Object); err != nil {
		return fmt.Errorf("object: %w", err)
	}
	ev.Object = u
	if len(data.OldObject) > 0 {
		old := &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(data.OldObject); err != nil {
			return fmt.Errorf("oldObject: %w", err)
		}
		ev.OldObject = old
	}
	return nil
}

// patchOf checks the patch of an event's data (contract §14): absent
// (nil, or null), or a JSON array on an update.
func patchOf(verb Verb, p json.RawMessage) (json.RawMessage, error) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return nil, nil
	}
	if verb != Updated {
		return nil, fmt.Errorf("a patch on a %s event: only updates carry one", verb)
	}
	if p[0] != '[' {
		return nil, fmt.Errorf("patch %.40s is not a JSON array", p)
	}
	return p, nil
}

package consume

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

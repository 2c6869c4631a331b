package consume

import (
	"encoding/json"

	"github.com/cloudevents/sdk-go/v2/event"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Verb says what an event reports; it is the last part of its CloudEvents
// type.
type Verb string

// The verbs of the CloudEvents types the bridge publishes.
const (
	Added         Verb = "added"          // io.kubebridge.object.added
	Updated       Verb = "updated"        // io.kubebridge.object.updated
	Deleted       Verb = "deleted"        // io.kubebridge.object.deleted
	SnapshotBegin Verb = "snapshot.begin" // io.kubebridge.snapshot.begin
	SnapshotItem  Verb = "snapshot.item"  // io.kubebridge.snapshot.item
	SnapshotEnd   Verb = "snapshot.end"   // io.kubebridge.snapshot.end
	// Term is a term marker (io.kubebridge.term): a bridge began to lead.
	// Its stream sequence is the term its events carry. Events never
	// yields it; an Applier needs it for the term rule.
	Term Verb = "term"
)

var verbByType = map[string]Verb{
	contract.TypeAdded:         Added,
	contract.TypeUpdated:       Updated,
	contract.TypeDeleted:       Deleted,
	contract.TypeSnapshotBegin: SnapshotBegin,
	contract.TypeSnapshotItem:  SnapshotItem,
	contract.TypeSnapshotEnd:   SnapshotEnd,
	contract.TypeTerm:          Term,
}

// IsMarker reports whether v frames a snapshot.
func (v Verb) IsMarker() bool { return v == SnapshotBegin || v == SnapshotEnd }

// Event is one decoded message of a kubebridge stream.
type Event struct {
	// CloudEvent holds the attributes and extensions as sdk-go decodes
	// them (extensions arrive as strings) and the raw data.
	CloudEvent event.Event
	// Seq is the message's stream sequence.
	Seq uint64
	// Subject is the NATS subject.
	Subject string
	Verb    Verb

	// Resource is the type, from the subject (empty on term markers).
	Resource schema.GroupVersionResource
	// Namespace and Name of the object ("" namespace: cluster-scoped);
	// empty on markers.
	Namespace, Name string
	// UID and ResourceVersion of the object; empty on markers.
	UID             types.UID
	ResourceVersion string
	// Object is the object (Added, Updated, SnapshotItem) or its last
	// known state (Deleted), decoded into its client-go type when the
	// scheme knows its kind (*corev1.ConfigMap, …), else into
	// *unstructured.Unstructured. Nil on markers.
	Object runtime.Object
	// OldObject is the state before an update, as the stream last
	// published the object (contract §5, §13); nil otherwise, and on an
	// update of a type whose rules leave it out (oldObject: false).
	OldObject runtime.Object
	// Patch is the RFC 6902 JSON Patch (a JSON array, raw) that an update
	// of a type whose rules ask for it (patch: true) carries: applied to
	// the object as the stream last published it (OldObject, sent or
	// not) it gives Object (contract §14). Nil when the event has none.
	// Object is complete either way: State and Applier never need it.
	Patch json.RawMessage

	// Term is the term the event was written in: the stream sequence of
	// its bridge's term marker, 0 when the bridge predates terms.
	Term uint64
	// Shard is the shard of the bridge that wrote the event, from its
	// shard extension or, on a marker, its subject: the zero value for an
	// unsharded bridge (no extension, or 0/1). Terms are per shard, and a
	// snapshot end sweeps only the objects whose last event carried its
	// shard.
	Shard contract.Shard
	// SnapshotID names the snapshot of an item or marker.
	SnapshotID string
	// Scope, on a begin marker, is what the bridge watches the type for;
	// the zero Scope (no marker says otherwise) is everything.
	Scope Scope
	// SnapshotCount is the number of items an end marker says were
	// published.
	SnapshotCount int
	// Unpublished, on an end marker, lists the cache keys (namespace/name,
	// or name) of objects that exist but have no item: never sweep them.
	Unpublished []string
	// FinalStateUnknown is set on a delete inferred from a relist or a
	// restart: Object may be older than the state the object was deleted
	// in.
	FinalStateUnknown bool
	// Truncated is set when the object was too large to publish: Object
	// and OldObject hold only apiVersion, kind and identifying metadata.
	Truncated bool
	// Coalesced is the number of changes the event stands for when
	// changes waited and were merged (2 or more on added, updated and
	// deleted; on an item, the live changes it superseded), else 0.
	Coalesced int
}

// Key is the object's cache key, namespace/name or name, as client-go's
// MetaNamespaceKeyFunc makes it.
func (e *Event) Key() string {
	if e.Namespace == "" {
		return e.Name
	}
	return e.Namespace + "/" + e.Name
}

// Scope is what a bridge watches a type for, as its snapshot begin markers
// say: objects outside it are not in the stream, and their absence says
// nothing. Empty fields mean all.
type Scope struct {
	// Namespaces watched; empty: all (and for cluster-scoped types).
	Namespaces []string
	// LabelSelector and FieldSelector, in the API server's syntax.
	LabelSelector string
	FieldSelector string
	// Match is the type's match rule (contract §12), a CEL expression
	// over object: only the objects it is true for are in the stream.
	// Empty: every object is.
	Match string
	// IgnoreFields are the paths of keys removed from every published
	// object (contract §11). Compare the cluster's objects with the
	// stream's after removing them, and without metadata.resourceVersion,
	// which lags for updates of ignored fields only.
	IgnoreFields [][]string
}

// IsZero reports whether the scope is everything, every field published.
func (s Scope) IsZero() bool {
	return len(s.Namespaces) == 0 && s.LabelSelector == "" && s.FieldSelector == "" && s.Match == "" && len(s.IgnoreFields) == 0
}

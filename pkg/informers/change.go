package informers

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Verb says what a Change reports.
type Verb string

// The verbs. Added, Updated and Deleted come from informer callbacks; the
// Snapshot verbs frame a listing of the indexer.
const (
	Added         Verb = "added"
	Updated       Verb = "updated"
	Deleted       Verb = "deleted"
	SnapshotBegin Verb = "snapshot.begin"
	SnapshotItem  Verb = "snapshot.item"
	SnapshotEnd   Verb = "snapshot.end"
)

// IsMarker reports whether v frames a snapshot rather than describing an
// object.
func (v Verb) IsMarker() bool { return v == SnapshotBegin || v == SnapshotEnd }

// Resource is one resolved resource type.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// Type is the resource type as its subjects name it.
func (r Resource) Type() contract.Type {
	return contract.Type{Group: r.GVR.Group, Version: r.GVR.Version, Resource: r.GVR.Resource}
}

// GroupVersionKind is the kind objects of this resource are served as.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GVR.GroupVersion().WithKind(r.Kind)
}

// String names the resource as kubectl does: resource.version.group.
func (r Resource) String() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource + "." + r.GVR.Version
	}
	return r.GVR.Resource + "." + r.GVR.Version + "." + r.GVR.Group
}

// Change is one thing that happened to, or was listed for, a resource type.
type Change struct {
	Verb     Verb
	Resource *Resource
	// Object is the new state (Added, Updated, SnapshotItem) or the last
	// known state (Deleted). Nil for snapshot markers. Read-only.
	Object runtime.Object
	// OldObject is the previous state for Updated. Read-only.
	OldObject runtime.Object
	// FinalStateUnknown is set on Deleted when the delete was inferred from
	// a relist: Object is then the last state the cache held, which may be
	// older than the state the object had when it was deleted.
	FinalStateUnknown bool
	// SnapshotID identifies the snapshot for the Snapshot verbs.
	SnapshotID string
	// Scope, on SnapshotBegin, is what the type is watched for.
	Scope Scope
	// SnapshotCount is the number of items on SnapshotEnd.
	SnapshotCount int
	// SnapshotUnpublished, on SnapshotEnd, lists the cache keys (namespace/
	// name, or name) of objects whose item could not be published in any
	// form: consumers must not sweep them, they exist.
	SnapshotUnpublished []string
	// Coalesced is the number of changes this one stands for when pending
	// changes of the object were merged while publishing was behind: two
	// or more on Added, Updated and Deleted; one or more on a SnapshotItem
	// that superseded pending changes. Zero means the change stands alone.
	Coalesced int
	// ObservedAt is when the bridge saw the change.
	ObservedAt time.Time
}

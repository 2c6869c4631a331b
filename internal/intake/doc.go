// Package intake holds what the bridge has to publish, per object, between
// the informer handlers and the publishing pipeline: its one type, Intake,
// owns every object's state (waiting, in flight, held for a type's
// missed-delete scan) and every move between them, merges the changes of
// an object that wait (so memory follows the number of objects, as with
// client-go's DeltaFIFO), feeds snapshots lazily from the informer caches,
// and hands work on in order, one change in flight per object.
//
// It is producer-side code internal to the bridge: internal/bridge feeds it
// from the informers, takes Work from it and reports each Work's outcome
// (Done or Requeue). It does no I/O and publishes nothing.
package intake

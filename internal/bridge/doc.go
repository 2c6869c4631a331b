// Package bridge wires the pieces into the running bridge: informer
// handlers hand every change to the intake, which keeps per-object state
// (changes of one object merge while they wait, so memory follows the number
// of objects) and feeds snapshots lazily from the informer caches; the
// pipeline's run loop takes work from it in order and drops what a snapshot
// has already overtaken (the order guard);
// encoders turn work into messages in parallel without reordering it; the
// collector holds encoded messages to a byte budget; the sink publishes
// them. Each type's snapshotter asks for its start-up snapshot as soon as
// its own cache has synced, then one every resync period.
package bridge

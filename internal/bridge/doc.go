// Package bridge wires the pieces into the running bridge. New wires a
// replica from what it is given and does no I/O; Run first prepares it
// (discovery of the configured types, the stream check, the informers:
// prepare.go), then runs it. Informer handlers hand every change to the
// intake (internal/intake), which keeps per-object state (changes of one
// object merge while they wait, so memory follows the number of objects)
// and feeds snapshots lazily from the informer caches; the pipeline's run
// loop takes work from it in order, drops what a snapshot has already
// overtaken (the order guard) and reports each work's outcome back to it
// (settle.go); encoders turn work into messages in parallel without
// reordering it; the collector holds encoded messages to a byte budget;
// the sink publishes them. Each type's snapshotter asks for its start-up
// snapshot as soon as its own cache has synced, then one every resync
// period.
package bridge

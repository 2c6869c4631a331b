// Package bridge wires the pieces into the running bridge: informer
// handlers put Changes on a bounded queue; a single sequencer drops changes
// a snapshot has already overtaken; encoders turn changes into messages in
// parallel without reordering them; the sink publishes them. Snapshotters
// frame listings of each type's indexer, at start-up, periodically, and
// after changes were dropped because the queue was full.
package bridge

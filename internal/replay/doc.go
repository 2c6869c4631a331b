// Package replay owns the reference consumer: it reads a kubebridge stream
// back from JetStream and rebuilds the state of the watched objects the way
// the README tells consumers to — upsert on added, updated and snapshot
// items, remove on deleted, and after a snapshot end marker remove every
// object of that type not seen since the matching begin marker. It records
// every violation of the stream's two invariants, so tests can assert them.
package replay

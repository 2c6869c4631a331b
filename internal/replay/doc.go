// Package replay owns the reference consumer: it reads a kubebridge stream
// back from JetStream and rebuilds the state of the watched objects the way
// the contract (docs/contract.md §3, §7) tells consumers to — upsert on
// added, updated and snapshot items, remove on deleted (of the uid the subject holds; a delete of any
// other uid is a no-op), and after a snapshot end marker remove every
// object of that type not seen since the matching begin marker. Objects
// are identified per type by uid, so a name deleted and created again is
// two objects. It records every violation of the stream's two invariants
// (no resourceVersion regression per uid, mark-and-sweep), and counts the
// changes events stand for through their coalesced extension, so tests can
// assert them. For types with rules (contract 1.3) it keeps the scope each
// type's begin markers say (match and ignored fields included, §11, §12),
// takes a uid that comes back after its delete at a newer resourceVersion
// for an object entering match again, and checks that every update's
// patch turns the object last published into the new one (§14).
//
// Tests and benchmarks only. Of this module it imports pkg/contract and
// pkg/cenats, never pkg/consume: it is written from the contract, so that
// the two readers check each other.
package replay

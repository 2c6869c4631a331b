// Package encode turns an informers.Change into the message the contract
// (pkg/contract, docs/contract.md) describes: a CloudEvents 1.0 event in
// binary content mode over NATS headers (pkg/cenats), on the subject the
// contract names, with a deterministic id.
//
// Everything here is pure: the same Change always encodes to the same bytes
// (apart from the observation time it carries), which is what the golden
// tests pin down.
//
// It is on the producer's side of pkg/ (docs/architecture.md), where the
// design fixes its path. Of this module it imports pkg/contract and
// pkg/informers (a Change), and nothing under internal/.
package encode

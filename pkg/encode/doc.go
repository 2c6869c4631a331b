// Package encode turns an informers.Change into the message the contract
// (pkg/contract, docs/contract.md) describes: a CloudEvents 1.0 event in
// binary content mode over NATS headers (pkg/cenats), on the subject the
// contract names, with a deterministic id.
//
// Everything here is pure: the same Change always encodes to the same bytes
// (apart from the observation time it carries), which is what the golden
// tests pin down.
package encode

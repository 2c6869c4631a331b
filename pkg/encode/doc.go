// Package encode owns the wire contract: it turns an informers.Change into a
// CloudEvents 1.0 event in binary content mode over NATS headers, names the
// NATS subject it is published on, and gives every event a deterministic id.
//
// Everything here is pure: the same Change always encodes to the same bytes
// (apart from the observation time it carries), which is what the golden
// tests pin down.
package encode

// Package sink owns the NATS side of the bridge: it makes sure the JetStream
// stream exists and covers the bridge's subjects, and publishes messages
// asynchronously with a bounded window, retrying every failed publish until
// it is acknowledged.
//
// Ordering is what a consumer rebuilding state relies on, so the publisher
// keeps it where it matters: two messages on one subject are never in
// flight together (a retried message cannot land after a newer one for the
// same object), and a barrier message is stored after everything sent before
// it and before anything sent after it. Order is kept per subject only, so
// a subject waiting for its ack parks its later messages instead of holding
// back every other subject.
//
// A message's outcome settles it where it arrives: with Acks installed on
// the JetStream, nats.go's acknowledgement goroutine settles it and sends
// the subject's next message, so no goroutine waits per message in
// flight; a failure, and every publish without Acks, goes to a goroutine
// of the subject's own that retries it.
//
// It is on the producer's side of pkg/ (docs/architecture.md), where the
// design fixes its path. It publishes nats.Msg values, so it needs neither
// pkg/informers nor pkg/encode: of this module it may import pkg/contract
// and pkg/streamread, and nothing under internal/.
package sink

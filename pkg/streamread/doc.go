// Package streamread reads a JetStream stream up to where it stood when the
// reading began: the bridge's scan of the last message per subject, a
// consumer's bootstrap and its marker scans, and the CLI's verify all stop
// there, so they share one rule for "caught up".
//
// The rule: the stream's last sequence is read after the consumer exists,
// never before. A consumer of the last message per subject delivers, of a
// subject written between the two, only the newer message, which lies
// after a last sequence read before; a reader that stopped there would
// miss that subject altogether.
//
// It is on the consumer's side of pkg/ (docs/architecture.md), and
// pkg/sink reads the bridge's stream back through it too. It imports
// nothing of this module, only the NATS client, so pkg/consume, pkg/sink
// and the CLI can all use it without growing their dependencies.
package streamread

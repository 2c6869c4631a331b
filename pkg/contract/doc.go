// Package contract is the wire contract of kubebridge (docs/contract.md)
// in code: the NATS subjects and how they are parsed, the CloudEvents
// types, extension attributes and headers, the term marker's payload and
// the contract version.
//
// It serves both sides of pkg/ (docs/architecture.md): the bridge writes
// what it names (pkg/encode); pkg/consume, the CLI and the replay tool read
// it back through the one parser here (Subjects.Parse). It imports the
// standard library only, so that a consumer that reads the stream compiles
// no informer, lister or clientset.
package contract

// Package cenats is the CloudEvents NATS protocol binding in binary content
// mode, as kubebridge writes and reads it: every attribute and extension a
// ce- header, the data the payload, and datacontenttype also sent as
// Content-Type. It goes through sdk-go's binding package both ways, so an
// event reads back as any sdk-go based consumer reads it.
//
// It is on the consumer's side of pkg/ (docs/architecture.md); the bridge
// uses it too where it reads its own stream back (the missed-delete
// scan). Of this module it imports pkg/contract only, and nothing under
// internal/.
package cenats

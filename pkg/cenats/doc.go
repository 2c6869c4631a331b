// Package cenats is the CloudEvents NATS protocol binding in binary content
// mode, as kubebridge writes and reads it: every attribute and extension a
// ce- header, the data the payload, and datacontenttype also sent as
// Content-Type. It goes through sdk-go's binding package both ways, so an
// event reads back as any sdk-go based consumer reads it.
package cenats

// Package testpki makes throwaway certificate authorities and the
// certificates they sign, written as PEM files, for tests that run NATS
// over TLS: the configuration's checks of TLS files, and clients and
// in-process servers doing mutual TLS.
//
// Tests only. It imports nothing of this module.
package testpki

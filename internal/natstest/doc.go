// Package natstest starts in-process NATS servers and connects to them for
// tests, so that the packages testing against a real server (pkg/sink,
// pkg/consume, internal/bridge, the in-process bridge of
// internal/bridgetest) start and connect one the same way, and every server
// and connection ends with the test; and checks that a server requiring
// TLS refuses a client speaking clear text (CheckRefusesPlainText).
//
// Tests only. Of this module it imports internal/natsembed and
// internal/freeport.
package natstest

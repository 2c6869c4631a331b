// Package natsconf parses, for tests, the nats-server configuration that a
// rendered StatefulSet runs, with nats-server's own parser, so that the
// manifest tests of deploy/kustomize and the tests of test/e2e read it the
// same way.
//
// Tests only. It imports nothing of this module.
package natsconf

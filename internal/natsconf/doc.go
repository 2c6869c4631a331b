// Package natsconf parses, for tests, the nats-server configuration that a
// rendered StatefulSet runs, with nats-server's own parser, so that the
// manifest tests of deploy/kustomize and the tests of test/e2e read it the
// same way; and maps the files of the Secrets a container mounts (the NATS
// TLS certificates) to files on this machine, those hack/nats-certs.sh
// writes (Script) or an apiserver's Secrets (WriteCerts).
//
// Tests only. It imports nothing of this module.
package natsconf

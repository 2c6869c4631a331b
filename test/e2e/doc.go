// Package e2e holds the end-to-end tests of the bridge binary: the
// command built from ./cmd/bridge runs as its own process, configured only
// through its environment, against a real etcd + kube-apiserver and a NATS
// JetStream server started by internal/testenv. The tests change objects
// through the Kubernetes API and read the stream back with the reference
// consumer in internal/replay.
//
// Run them with the control-plane binaries:
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) KUBEBRIDGE_REQUIRE_E2E=1 go test -count=1 -v ./test/e2e/
//
// Without the binaries every test skips (or, with KUBEBRIDGE_REQUIRE_E2E=1,
// the run fails). When the tests run with -race, the bridge is built with
// -race too, and a data race makes it exit non-zero, which fails the test.
package e2e

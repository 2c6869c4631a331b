// Package testenv runs a real, throw-away control plane for end-to-end
// tests: etcd and kube-apiserver as child processes (built from Go modules
// by hack/build-kube-bins.sh) plus an in-process NATS server with
// JetStream enabled; and, for tests that SIGKILL NATS servers or cluster
// them, nats-server processes run from config files (NATSProcess,
// NATSCluster). A cluster started with PartitionableRoutes routes its
// nodes through proxies of its own (internal/netproxy), so that a test
// can cut one node off from its peers (Partition, Heal).
//
// It owns the lifecycle of those processes and everything they need on
// disk (temp dir, ports, serving certs, service-account keys, the admin
// token, kubeconfig and log files), and the fault-injection helpers tests
// use against them: killing and restarting kube-apiserver, etcd and NATS,
// partitioning a NATS node, and compacting etcd.
//
// One environment is shared by all tests of a package. Start it from
// TestMain and fetch it in each test:
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{})
//	}
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Get(t) // skips when the binaries are not available
//		cs := kubernetes.NewForConfigOrDie(env.RESTConfig())
//		...
//	}
//
// The binaries are located through $KUBEBRIDGE_KUBE_BINS (see BinDir).
// When it is unset, tests are skipped unless $KUBEBRIDGE_REQUIRE_E2E=1
// (set by `make test` and CI), in which case the run fails.
//
// No controller-manager runs: there is no default ServiceAccount and
// deleted namespaces never finish terminating, so tests should isolate
// themselves in unique namespaces rather than rely on cleanup.
//
// Tests, benchmarks and the demo only. Of this module it imports
// internal/natsembed, internal/natstest, internal/freeport and
// internal/netproxy.
package testenv

// Package bridgetest runs the bridge in process for tests: bridge.Serve on
// internal/testenv's apiserver and nats-server, configured as the
// deployment is (from BRIDGE_* variables), and stopped when the test ends.
// The example controller's, the CLI's and pkg/consume's tests share it, so
// that starting a bridge and waiting until it is ready is written once.
//
// Tests only. Of this module it imports internal/bridge, internal/config,
// internal/testenv and internal/natstest.
package bridgetest

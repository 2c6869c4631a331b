// Package natsembed owns the NATS server the bridge starts in-process when
// no NATS_URL is configured, so that a first run needs nothing else.
//
// It serves the producer (internal/bridge); the test helpers
// (internal/natstest, internal/testenv) and hack/bench/fencecost start
// their servers through it too. It imports nothing of this module.
package natsembed

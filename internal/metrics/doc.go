// Package metrics owns the bridge's Prometheus metrics and its operational
// HTTP endpoints (/metrics, /healthz, /readyz). Metrics live in a registry
// per Metrics value, never in package state.
//
// It serves the producer (internal/bridge) and imports nothing of this
// module.
package metrics

// Package benchkit is what the benchmarks under hack/bench share for
// loading an apiserver: calls retried a few times, and work spread over
// several goroutines that stops at the first error.
package benchkit

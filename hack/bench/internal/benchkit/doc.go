// Package benchkit is what the benchmarks under hack/bench share for
// loading an apiserver and measuring what it costs: calls retried a few
// times, work spread over several goroutines that stops at the first
// error, calls made at a fixed rate, the benchmark ConfigMaps (created,
// one data key rewritten, deleted), the bridge's embedded NATS server
// started on a temporary store, CPU profiles, and a process's CPU time
// and memory read from /proc.
package benchkit

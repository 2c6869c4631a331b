// Package leader elects one publishing replica among several with a
// coordination.k8s.io Lease, through client-go's leaderelection. A replica
// that loses the Lease is told at once and must stop publishing; it never
// gets the Lease back within the same process.
//
// It serves the producer (internal/bridge) and imports nothing of this
// module.
package leader

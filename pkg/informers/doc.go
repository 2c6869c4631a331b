// Package informers owns the Kubernetes side of the bridge: it resolves
// resource names the way kubectl does, runs one shared informer per
// configured resource type (typed for built-ins, dynamic for custom
// resources; the bridge caches both as Compact: their JSON and the
// metadata the bridge reads, copied from the apiserver's JSON where it
// can be, written once from the typed object otherwise), trims objects
// before they enter the cache,
// and turns handler callbacks and indexer listings into Change values.
//
// Objects handed out in a Change belong to the informer cache: consumers
// must treat them as read-only.
//
// It is on the producer's side of pkg/ (docs/architecture.md), where the
// design fixes its path. Of this module it imports pkg/contract only, and
// nothing under internal/.
package informers

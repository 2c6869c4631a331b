// Package informers owns the Kubernetes side of the bridge: it resolves
// resource names the way kubectl does, runs one shared informer per
// configured resource type (typed for built-ins, dynamic for custom
// resources, whose objects are cached as Compact: their JSON and the
// metadata the bridge reads, copied from the apiserver's JSON where it
// can be), trims objects before they enter the cache,
// and turns handler callbacks and indexer listings into Change values.
//
// Objects handed out in a Change belong to the informer cache: consumers
// must treat them as read-only.
//
// It is on the producer's side of pkg/ (docs/architecture.md), where the
// design fixes its path. Of this module it imports pkg/contract only, and
// nothing under internal/.
package informers

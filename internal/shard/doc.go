// Package shard decides which of a bridge's N shards owns an object, and
// says it to the apiserver: the ownership rule of docs/design/sharding.md.
//
// An object's shard is decided by its namespace (by its name when it is
// cluster-scoped), never by its uid: a subject is an object's namespace and
// name, and one subject must have one writer, also when the object is
// deleted and created again with a new uid. The namespace's 64-bit FNV-1a
// hash (the apiserver's shard hash, KEP-5866) is mixed and mapped to a shard
// with jump consistent hashing, so similar names spread evenly and a change
// from N to N+1 shards moves keys only to the new shard.
//
// It serves the producer (internal/bridge; the benchmarks and tests ask it
// the same question). Of this module it imports pkg/contract only.
package shard

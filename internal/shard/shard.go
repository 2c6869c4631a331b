package shard

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Shard is one of N shards; the contract names it (the shard extension,
// the shards' subjects), this package decides what it owns.
type Shard = contract.Shard

// Owns reports whether s owns the object namespace/name (namespace empty
// for a cluster-scoped object). The zero Shard and 0/1 own everything.
func Owns(s Shard, namespace, name string) bool {
	return !s.Sharded() || Of(Key(namespace, name), s.Count) == s.Index
}

// Owner is Owns for s, in the form informers.WithOwns and the missed-delete
// scan take.
func Owner(s Shard) func(namespace, name string) bool {
	return func(namespace, name string) bool { return Owns(s, namespace, name) }
}

// Key is what decides an object's shard: its namespace, or its name when it
// is cluster-scoped. A Namespace object and the objects in it share a key.
func Key(namespace, name string) string {
	if namespace != "" {
		return namespace
	}
	return name
}

// Of is the index of the shard, of n, that owns key.
func Of(key string, n int) int { return jump(mix(Hash(key)), n) }

// Hash is key's 64-bit FNV-1a hash, the hash the apiserver's shard
// selectors range over.
func Hash(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}

// mix is MurmurHash3's 64-bit finalizer. FNV-1a leaves names that differ in
// their last characters (team-1 … team-9) close together in the high bits;
// mixed, every bit of the key moves every bit of the result.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// jump is Lamping and Veach's jump consistent hash ("A Fast, Minimal
// Memory, Consistent Hash Algorithm", 2014): key's bucket of n, such that
// going from n to n+1 buckets moves about 1/(n+1) of the keys, all of them
// to the new bucket.
func jump(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// SelectorLimit is the longest shard selector the apiserver takes: it
// parses selectors as CEL, and refuses an expression of more than 100,000
// code points (measured on v1.37.1: TestAPIServerSelectorLimit). A
// NamespaceSelector spends 85 characters and a separator on each
// namespace, whatever its name: 1,176 fit; a shard that owns more filters
// itself.
const SelectorLimit = 100_000

// NamespaceSelector is the apiserver shard selector (KEP-5866,
// ListOptions.ShardSelector) that matches the objects of exactly these
// namespaces: one point range of the namespace hash each, joined by "||".
func NamespaceSelector(namespaces []string) string {
	parts := make([]string, 0, len(namespaces))
	for _, ns := range namespaces {
		h := Hash(ns)
		end := fmt.Sprintf("0x%016x", h+1)
		if h == ^uint64(0) {
			end = "0x10000000000000000" // 2^64, the exclusive end of the space
		}
		parts = append(parts, shardRange(fmt.Sprintf("0x%016x", h), end))
	}
	return strings.Join(parts, " || ")
}

// ExcludeSelector is the apiserver shard selector that matches the objects
// of every namespace but these (another shard's): the ranges of the
// namespace hash between theirs. Namespaces unknown when it is built, one
// created later say, fall in a range and are sent; the receiver's own
// filter then decides. Since ownership is a function of the name, a
// shard's selector built from other shards' namespaces can never leave out
// one of its own objects, however stale the list of namespaces it was
// built from. It is "" when there is nothing to exclude, or when the
// selector would be longer than the apiserver takes (SelectorLimit): then
// nothing is filtered on the server.
func ExcludeSelector(namespaces []string) string {
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		hashes = append(hashes, Hash(ns))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	if len(hashes) == 0 {
		return ""
	}
	var parts []string
	start, open := uint64(0), true // the next range starts at start; open: start is valid (not past 2^64-1)
	for _, h := range hashes {
		if open && start < h {
			parts = append(parts, shardRange(fmt.Sprintf("0x%016x", start), fmt.Sprintf("0x%016x", h)))
		}
		start, open = h+1, h != ^uint64(0)
	}
	if open {
		parts = append(parts, shardRange(fmt.Sprintf("0x%016x", start), "0x10000000000000000"))
	}
	sel := strings.Join(parts, " || ")
	if len(sel) > SelectorLimit {
		return ""
	}
	return sel
}

func shardRange(start, end string) string {
	return "shardRange(object.metadata.namespace, '" + start + "', '" + end + "')"
}

// ServerFiltered reports whether a list response was filtered by the
// apiserver with the shard selector sent: the apiserver echoes it in the
// list's shardInfo (KEP-5866). An apiserver without the
// ShardedListAndWatch feature ignores the selector and returns everything,
// without shardInfo; the caller must then filter itself.
func ServerFiltered(info *metav1.ShardInfo, sent string) bool {
	return info != nil && info.Selector == sent
}

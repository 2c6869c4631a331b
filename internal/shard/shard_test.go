package shard

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/sharding"
)

// Every object is owned by exactly one shard, whatever N.
func TestEveryKeyHasOneOwner(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 8; n++ {
		for range 2000 {
			ns, name := "ns-"+strconv.Itoa(rng.IntN(500)), "obj-"+strconv.Itoa(rng.IntN(1000))
			if rng.IntN(10) == 0 {
				ns = "" // cluster-scoped
			}
			owners := 0
			for i := range n {
				if Owns(Shard{Index: i, Count: n}, ns, name) {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("%q/%q has %d owners among %d shards", ns, name, owners, n)
			}
		}
	}
}

// A Namespace and the objects in it are on one shard, and an object's
// shard depends on its namespace only (so a name deleted and created again
// stays where it was, whatever its new uid).
func TestKeyIsTheNamespace(t *testing.T) {
	for n := 2; n <= 5; n++ {
		for i := range 200 {
			ns := fmt.Sprintf("team-%d", i)
			want := Of(Key("", ns), n) // the Namespace object itself
			for _, name := range []string{"a", "b", "web-7d9f", "kube-root-ca.crt"} {
				if got := Of(Key(ns, name), n); got != want {
					t.Fatalf("N=%d: %s/%s on shard %d, its Namespace on %d", n, ns, name, got, want)
				}
			}
		}
	}
}

// Going from N to N+1 shards moves keys only to the new shard, and going
// back returns them: resharding never hands a namespace from one old shard
// to another.
func TestGrowingMovesKeysOnlyToTheNewShard(t *testing.T) {
	for n := 1; n <= 7; n++ {
		moved := 0
		const keys = 5000
		for i := range keys {
			k := "ns-" + strconv.Itoa(i)
			before, after := Of(k, n), Of(k, n+1)
			if after != before {
				if after != n {
					t.Fatalf("%s moved from shard %d to %d going from %d to %d shards", k, before, after, n, n+1)
				}
				moved++
			}
		}
		// About 1/(n+1) of the keys move.
		if want := keys / (n + 1); moved < want*8/10 || moved > want*12/10 {
			t.Errorf("%d to %d shards moved %d of %d keys, want about %d", n, n+1, moved, keys, want)
		}
	}
}

// Hash is the apiserver's shard hash, so a selector built from it matches
// what the ownership rule says.
func TestHashIsTheAPIServers(t *testing.T) {
	for _, s := range []string{"", "default", "kube-system", "team-1", "ümlaut", strings.Repeat("x", 63)} {
		if got, want := fmt.Sprintf("%016x", Hash(s)), sharding.HashField(s); got != want {
			t.Errorf("Hash(%q) = %s, the apiserver's %s", s, got, want)
		}
	}
}

// nameSets are namespace names as clusters have them.
func nameSets() map[string][]string {
	sets := map[string][]string{}
	var s []string
	for i := 1; i <= 50; i++ {
		s = append(s, fmt.Sprintf("team-%d", i))
	}
	sets["team-1 … team-50"] = s
	s = nil
	apps := []string{"payments", "checkout", "search", "catalog", "users", "auth", "orders", "billing", "inventory", "shipping",
		"notifications", "reviews", "recommendations", "gateway", "analytics", "reporting", "media", "chat", "email", "cart"}
	for _, a := range apps {
		s = append(s, "prod-"+a, "staging-"+a)
	}
	sets["prod-* and staging-* (40)"] = s
	s = nil
	for i := range 200 {
		s = append(s, fmt.Sprintf("ns-%03d", i))
	}
	sets["ns-000 … ns-199"] = s
	s = nil
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for range 200 {
		b := make([]byte, 5+rng.IntN(10))
		for j := range b {
			b[j] = letters[rng.IntN(len(letters))]
		}
		s = append(s, string(b))
	}
	sets["random (200)"] = s
	return sets
}

// The rule spreads realistic namespace sets over the shards: no shard has
// more than 1.45 times its even share, on name sets where equal ranges of
// the raw FNV-1a hash (the apiserver's) put every namespace on one shard.
// go test -run Balance -v ./internal/shard prints the table in
// docs/design/sharding.md.
func TestBalance(t *testing.T) {
	sets := nameSets()
	for _, name := range []string{"team-1 … team-50", "prod-* and staging-* (40)", "ns-000 … ns-199", "random (200)"} {
		set := sets[name]
		for n := 2; n <= 4; n++ {
			rule, ranges := make([]int, n), make([]int, n)
			for _, ns := range set {
				rule[Of(ns, n)]++
				ranges[rangeOf(Hash(ns), n)]++
			}
			worst := float64(maxOf(rule)) * float64(n) / float64(len(set))
			t.Logf("| %s | %d | %v | %.2f | %v | %.2f |", name, n, rule, worst, ranges, float64(maxOf(ranges))*float64(n)/float64(len(set)))
			if worst > 1.45 {
				t.Errorf("%s over %d shards: %v, the fullest %.2f times its share", name, n, rule, worst)
			}
		}
	}
}

// rangeOf is the shard of hash h among n equal ranges of the hash space:
// the apiserver-side split the rule is compared with.
func rangeOf(h uint64, n int) int {
	hi, _ := mulHi(h, uint64(n))
	return int(hi)
}

func mulHi(x, y uint64) (uint64, uint64) {
	const mask = 1<<32 - 1
	x0, x1, y0, y1 := x&mask, x>>32, y&mask, y>>32
	w0 := x0 * y0
	t := x1*y0 + w0>>32
	w1, w2 := t&mask, t>>32
	w1 += x0 * y1
	return x1*y1 + w2 + w1>>32, x * y
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func TestNamespaceSelector(t *testing.T) {
	got := NamespaceSelector([]string{"a", "b"})
	want := fmt.Sprintf("shardRange(object.metadata.namespace, '0x%016x', '0x%016x') || shardRange(object.metadata.namespace, '0x%016x', '0x%016x')",
		Hash("a"), Hash("a")+1, Hash("b"), Hash("b")+1)
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// ranges parses a selector of shardRange terms into [start, end) pairs;
// an end of 2^64 is end 0 with top set.
func ranges(t *testing.T, sel string) (out [][2]uint64, top []bool) {
	t.Helper()
	re := regexp.MustCompile(`^shardRange\(object\.metadata\.namespace, '0x([0-9a-f]{16})', '0x([0-9a-f]{16,17})'\)$`)
	for _, part := range strings.Split(sel, " || ") {
		m := re.FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("not a shardRange term: %q", part)
		}
		start, err1 := strconv.ParseUint(m[1], 16, 64)
		end, err2 := strconv.ParseUint(m[2], 16, 64)
		full := m[2] == "10000000000000000"
		if err1 != nil || (err2 != nil && !full) {
			t.Fatalf("bad range %q", part)
		}
		out = append(out, [2]uint64{start, end})
		top = append(top, full)
	}
	return out, top
}

// The exclusion selector matches every hash but the excluded namespaces':
// each excluded hash is outside every range, every other namespace (those
// that existed, and ones made up later) is inside one, and the ranges are
// ordered and disjoint.
func TestExcludeSelector(t *testing.T) {
	if got := ExcludeSelector(nil); got != "" {
		t.Errorf("nothing to exclude: %q, want no selector", got)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("ns-%d-%d", i, rng.IntN(1000)))
	}
	excluded := names[:120]
	rs, top := ranges(t, ExcludeSelector(excluded))
	in := func(h uint64) bool {
		for i, r := range rs {
			if h >= r[0] && (top[i] || h < r[1]) {
				return true
			}
		}
		return false
	}
	for _, ns := range excluded {
		if in(Hash(ns)) {
			t.Errorf("excluded %s (0x%016x) is inside a range", ns, Hash(ns))
		}
	}
	for _, ns := range append(names[120:], "created-later", "kube-system", "") {
		if !slices.Contains(excluded, ns) && !in(Hash(ns)) {
			t.Errorf("%s (0x%016x) is in no range", ns, Hash(ns))
		}
	}
	for i := 1; i < len(rs); i++ {
		if top[i-1] || rs[i][0] < rs[i-1][1] || rs[i][0] >= rs[i][1] && !top[i] {
			t.Errorf("ranges %d and %d overlap or are empty: %x %x", i-1, i, rs[i-1], rs[i])
		}
	}
}

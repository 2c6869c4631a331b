package contract

import (
	"errors"
	"strconv"
	"strings"
)

// ErrBadShard is returned for a shard that is not "i/N" with 0 <= i < N.
var ErrBadShard = errors.New("contract: shard is not i/N with 0 <= i < N")

// Shard is one of the N parts a cluster's objects are split into, each
// published by bridges of its own (docs/design/sharding.md): shard Index
// of Count. The zero value is the unsharded bridge's, the same as 0/1: it
// owns everything, and its subjects and events are those of a bridge
// without shards.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N", as String writes it and the shard extension
// carries it.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	sh := Shard{Index: index, Count: count}
	if !ok || err1 != nil || err2 != nil || sh.Validate() != nil || sh.String() != s {
		return Shard{}, &wrapped{ErrBadShard.Error() + ": " + strconv.Quote(s), ErrBadShard}
	}
	return sh.Normal(), nil
}

// Validate reports whether s is a shard: the zero value, or
// 0 <= Index < Count.
func (s Shard) Validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return &wrapped{ErrBadShard.Error() + ": " + strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count), ErrBadShard}
	}
	return nil
}

// String is "i/N", the value of the shard extension; "0/1" for the zero
// value.
func (s Shard) String() string {
	s = s.orOne()
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// Sharded reports whether s is one of several shards: its subjects and
// events name it. 0/1 and the zero value are not.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Normal is s in the form shards compare and are keyed in: the zero value
// for 0/1, so that an event without the extension and one with shard 0/1
// are of one shard.
func (s Shard) Normal() Shard {
	if !s.Sharded() {
		return Shard{}
	}
	return s
}

func (s Shard) orOne() Shard {
	if s == (Shard{}) {
		return Shard{Index: 0, Count: 1}
	}
	return s
}

// token is the subject token of a sharded marker or term subject,
// "<i>-of-<N>".
func (s Shard) token() string { return strconv.Itoa(s.Index) + "-of-" + strconv.Itoa(s.Count) }

// parseShardToken reads a token as token writes it, for a sharded shard
// only (0-of-1 is not a token: the unsharded subjects have none).
func parseShardToken(tok string) (Shard, bool) {
	i, n, ok := strings.Cut(tok, "-of-")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	sh := Shard{Index: index, Count: count}
	if !ok || err1 != nil || err2 != nil || !sh.Sharded() || sh.Validate() != nil || sh.token() != tok {
		return Shard{}, false
	}
	return sh, true
}

package bridge

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// termMarkers are the term markers a stream holds for one cluster, per
// shard: what the term rule for the last message per subject (contract
// §3) needs.
type termMarkers map[contract.Shard]contract.Terms

// readTermMarkers reads the term markers of every shard of the cluster.
func readTermMarkers(ctx context.Context, tail streamTail, subjects contract.Subjects) (termMarkers, error) {
	out := termMarkers{}
	err := tail.Every(ctx, subjects.Terms(), func(subject string, seq uint64, h nats.Header) error {
		if h.Get(contract.HeaderType) != contract.TypeTerm {
			return nil
		}
		sub, err := subjects.Parse(subject)
		if err != nil {
			return nil // not a term subject of this cluster
		}
		sh := sub.Shard.Normal()
		markers := out[sh]
		markers.Add(seq)
		out[sh] = markers
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the term markers: %w", err)
	}
	return out, nil
}

// deposed reports whether the message stored at seq with headers h is a
// deposed leader's: a term marker of its cluster and shard lies between
// its term and its own sequence, so a newer term had begun when it was
// stored, and consumers ignore it. A message without a readable term is
// not (it is foreign or older than terms, which the fence tells apart).
func (m termMarkers) deposed(seq uint64, h nats.Header) bool {
	term, err := contract.TermOf(h)
	if err != nil {
		return false
	}
	shard := contract.Shard{}
	if v := h.Get(contract.Header(contract.ExtShard)); v != "" {
		sh, err := contract.ParseShard(v)
		if err != nil {
			return false
		}
		shard = sh
	}
	markers := m[shard]
	return term < markers.Before(seq)
}

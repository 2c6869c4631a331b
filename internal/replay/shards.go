package replay

import "github.com/kubebridge/kubebridge/pkg/contract"

// shardTerm is the term rule's memory for one shard: every shard's bridges
// write their own term markers.
type shardTerm struct {
	markers contract.Terms
	highest uint64
}

// shardOf is the message's shard: "" for the unsharded bridge.
func shardOf(m Message) (string, error) {
	v := m.Ext(contract.ExtShard)
	if v == "" {
		return "", nil
	}
	sh, err := contract.ParseShard(v)
	if err != nil || !sh.Sharded() {
		return "", err
	}
	return sh.String(), nil
}

func (s *State) termOf(shard string) *shardTerm {
	t := s.terms[shard]
	if t == nil {
		t = &shardTerm{}
		s.terms[shard] = t
	}
	return t
}

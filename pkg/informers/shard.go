package informers

// WithShardSelector sends sel's selector (an apiserver shard selector, see
// k8s.io/apimachinery's ListOptions.ShardSelector) with the list and watch
// of a Source WithOwns that watches every namespace, so that an apiserver
// with the ShardedListAndWatch feature sends only what it matches. It
// must match everything owns accepts, whenever it is Set: owns still
// decides, so an apiserver that ignores it costs bytes, not correctness.
// ServerFiltered says which.
func WithShardSelector(sel *ShardSelector) SourceOption {
	return func(s *Source) error { s.shardSelector = sel; return nil }
}

// ServerFiltered reports whether the apiserver filtered the last list of
// a Source WithShardSelector (it echoed the selector); false before the
// first list, without a selector, and from an apiserver that ignores it.
func (s *Source) ServerFiltered() bool { return s.serverFiltered.Load() == 1 }

// listFiltered records whether a list sent with the shard selector was
// filtered by the apiserver, and says so when that changes.
func (s *Source) listFiltered(filtered bool) {
	v := int32(2)
	if filtered {
		v = 1
	}
	if s.serverFiltered.Swap(v) == v {
		return
	}
	if filtered {
		s.logger.Info("The apiserver filters this shard's list and watch (ShardedListAndWatch)")
	} else {
		s.logger.Info("The apiserver ignores the shard selector (feature gate ShardedListAndWatch off): every object is received and filtered here")
	}
}

// WithOwns makes the Source see only the objects owns accepts: the others
// are dropped from the informers' lists and watch events before they reach
// the cache, so a shard holds only its own part in memory.
func WithOwns(owns Owns) SourceOption {
	return func(s *Source) error { s.owns = owns; return nil }
}

// foreignOf is the count of other shards' objects of res for the
// observer, or nil when it does not take it.
func (s *Source) foreignOf(res *Resource) func(int) {
	fo, ok := s.observer.(ForeignObserver)
	if !ok {
		return nil
	}
	return fo.ForeignCounter(res)
}

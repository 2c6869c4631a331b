package informers

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// ShardSelector is the apiserver shard selector (k8s.io/apimachinery's
// ListOptions.ShardSelector) that a Source WithShardSelector sends with
// the list and watch of every namespace. Set replaces it while the Source
// runs: each watch started with the old one is stopped, and its reflector
// watches again from the resource version it had reached, with the new
// one. No relist is needed, because the selector only narrows what the
// apiserver sends: whatever it leaves out, the Source's Owns refuses too.
type ShardSelector struct {
	mu    sync.Mutex
	value string
	// generation counts Sets that changed value; a watch started under
	// an older one is stopped when it registers.
	generation uint64
	running    map[*selectorWatch]struct{}
}

// NewShardSelector is a ShardSelector that sends sel ("" sends none).
func NewShardSelector(sel string) *ShardSelector {
	return &ShardSelector{value: sel, running: map[*selectorWatch]struct{}{}}
}

// Set makes sel the selector, and reports whether it changed. When it
// did, the watches sent with the old one have been stopped by the time Set
// returns, so that no event the old one lets through and sel does not is
// delivered after that.
func (s *ShardSelector) Set(sel string) bool {
	s.mu.Lock()
	if sel == s.value {
		s.mu.Unlock()
		return false
	}
	s.value = sel
	s.generation++
	stale := make([]*selectorWatch, 0, len(s.running))
	for w := range s.running {
		stale = append(stale, w)
	}
	clear(s.running)
	s.mu.Unlock()
	for _, w := range stale {
		w.upstream.Stop()
	}
	return true
}

// current is the selector to send and its generation; none from a nil
// ShardSelector.
func (s *ShardSelector) current() (string, uint64) {
	if s == nil {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.generation
}

// track wraps w, a watch sent with the selector of generation gen, so
// that a later Set stops it. If a Set came between current and track, w is
// stopped at once: its reflector then watches again with the new selector.
func (s *ShardSelector) track(gen uint64, upstream, w watch.Interface) watch.Interface {
	sw := &selectorWatch{Interface: w, upstream: upstream, selector: s}
	s.mu.Lock()
	if gen != s.generation {
		s.mu.Unlock()
		upstream.Stop()
		return sw
	}
	s.running[sw] = struct{}{}
	s.mu.Unlock()
	return sw
}

// selectorWatch is a watch that a ShardSelector may stop; upstream is the
// apiserver's, which the Interface (the shard filter) reads.
type selectorWatch struct {
	watch.Interface
	upstream watch.Interface
	selector *ShardSelector
}

// Stop forgets the watch, so that the ShardSelector holds only running ones.
func (w *selectorWatch) Stop() {
	w.selector.mu.Lock()
	delete(w.selector.running, w)
	w.selector.mu.Unlock()
	w.Interface.Stop()
}

package recorder

import "sync"

// Log is a list that goroutines append to and tests read; the zero Log is
// empty and ready.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Append adds v to the end.
func (l *Log[T]) Append(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

// All is a copy of everything appended so far.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// Take is everything appended since the last Take, and empties the Log.
func (l *Log[T]) Take() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.items
	l.items = nil
	return out
}

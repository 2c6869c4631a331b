package consume

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// BootstrapMode is how a State builds its first view of the stream.
type BootstrapMode int

const (
	// LastPerSubject reads the last message of every subject of the types:
	// O(objects), and the result is the cluster's objects as of the newest
	// message read. An object's last message written by a deposed leader
	// after a newer term began is ignored (the term rule); the new term's
	// snapshot brings the object back.
	LastPerSubject BootstrapMode = iota
	// FullReplay applies every message of each type from the begin marker
	// of its latest complete snapshot (from the first message when none is
	// kept) with mark-and-sweep: every retained transition.
	FullReplay
)

func (m BootstrapMode) String() string {
	switch m {
	case LastPerSubject:
		return "LastPerSubject"
	case FullReplay:
		return "FullReplay"
	}
	return fmt.Sprintf("BootstrapMode(%d)", int(m))
}

// StateOption configures a State or an Applier.
type StateOption func(*stateOptions) error

type stateOptions struct {
	bootstrap       BootstrapMode
	indexers        map[typeRef]cache.Indexers
	hooks           Hooks
	stopOnViolation bool
}

func newStateOptions(opts []StateOption) (stateOptions, error) {
	o := stateOptions{indexers: map[typeRef]cache.Indexers{}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Bootstrap chooses how a State bootstraps; default LastPerSubject. An
// Applier ignores it.
func Bootstrap(m BootstrapMode) StateOption {
	return func(o *stateOptions) error {
		if m != LastPerSubject && m != FullReplay {
			return fmt.Errorf("%w: %v", ErrBadOption, m)
		}
		o.bootstrap = m
		return nil
	}
}

// WithIndexers adds indexers to the indexer of one type, named as in its
// Filter. Every indexer has cache.NamespaceIndex, which typed listers use.
func WithIndexers(resource string, indexers cache.Indexers) StateOption {
	return func(o *stateOptions) error {
		ref, err := parseResource(resource)
		if err != nil {
			return err
		}
		if o.indexers[ref] == nil {
			o.indexers[ref] = cache.Indexers{}
		}
		for name, f := range indexers {
			o.indexers[ref][name] = f
		}
		return nil
	}
}

// WithHooks sets the callbacks for violations and fenced events.
func WithHooks(h Hooks) StateOption {
	return func(o *stateOptions) error {
		o.hooks = h
		return nil
	}
}

// StopOnViolation makes a breach of the contract fatal: Apply returns it
// as a *Violation and State.Run ends with it. By default violations are
// reported (Hooks.OnViolation, Stats) and the reader goes on.
func StopOnViolation() StateOption {
	return func(o *stateOptions) error {
		o.stopOnViolation = true
		return nil
	}
}

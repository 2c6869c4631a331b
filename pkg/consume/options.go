package consume

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// BootstrapMode is how a State builds its first view of the stream.
type BootstrapMode int

const (
	// LastPerSubject reads the last message of every subject of the types:
	// O(objects), and the result is the cluster's objects as of the newest
	// message read. An object's last message written by a deposed leader
	// after a newer term began is ignored (the term rule); the new term's
	// snapshot brings the object back.
	//
	// It rests on nats-server's list of each subject's last sequence,
	// taken when the consumer is created, which nats-server 2.15.3 serves
	// badly while the stream is written: each listed message removed
	// before it is sent (a delete's roll-up, an expired tombstone) stops
	// delivery until the next pull or stream message, one at a time; and
	// a listed message due as a pull expires is skipped for good. A
	// bootstrap that stalls this way for 10 s starts over as a FullReplay.
	LastPerSubject BootstrapMode = iota
	// FullReplay applies every message of each type from the begin marker
	// of its latest complete snapshot (from the first message when none is
	// kept) with mark-and-sweep: every retained transition. It reads up to
	// the stream's messages per subject for each object, but through the
	// stream in order, which the server serves reliably: the default.
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

// Each constructor takes its own option type, so that an option it would
// ignore does not compile (as nats.go's jetstream package does): Bootstrap
// is for the readers that read the stream themselves (State, ListWatch and
// the informers built on it), WithIndexers for those that own their
// indexers (State, Applier), WithHooks and StopOnViolation for all.

// StateOption configures a State.
type StateOption interface {
	configureState(*stateOptions) error
}

// ApplierOption configures an Applier.
type ApplierOption interface {
	configureApplier(*stateOptions) error
}

// ListWatchOption configures a ListWatch, and the informers built on one.
type ListWatchOption interface {
	configureListWatch(*stateOptions) error
}

// ContractOption configures how a State, an Applier or a ListWatch reports
// what breaks the contract: WithHooks and StopOnViolation.
type ContractOption func(*stateOptions) error

func (f ContractOption) configureState(o *stateOptions) error     { return f(o) }
func (f ContractOption) configureApplier(o *stateOptions) error   { return f(o) }
func (f ContractOption) configureListWatch(o *stateOptions) error { return f(o) }

// ReadOption configures what reads the stream itself: a State or a
// ListWatch (Bootstrap).
type ReadOption func(*stateOptions) error

func (f ReadOption) configureState(o *stateOptions) error     { return f(o) }
func (f ReadOption) configureListWatch(o *stateOptions) error { return f(o) }

// IndexerOption configures what owns its indexers: a State or an Applier
// (WithIndexers). An informer's indexers are cache.NewSharedIndexInformer's.
type IndexerOption func(*stateOptions) error

func (f IndexerOption) configureState(o *stateOptions) error   { return f(o) }
func (f IndexerOption) configureApplier(o *stateOptions) error { return f(o) }

type stateOptions struct {
	bootstrap       BootstrapMode
	indexers        map[contract.Type]cache.Indexers
	hooks           Hooks
	stopOnViolation bool
	// keepOnSweep is the sweep guard of a ListWatch's State; no option
	// sets it (see Applier.keepOnSweep).
	keepOnSweep func(key string, obj any, end *Event) bool
	// noNamespaceIndex leaves cache.NamespaceIndex out of the indexers:
	// a ListWatch's State, which nobody lists by namespace (the
	// reflector's store above it has its own indexers), is spared an
	// index entry per object. No option sets it.
	noNamespaceIndex bool
}

// newOptions applies opts, whose configure method is given by the caller.
func newOptions[O any](opts []O, configure func(O, *stateOptions) error) (stateOptions, error) {
	o := stateOptions{bootstrap: FullReplay, indexers: map[contract.Type]cache.Indexers{}}
	for _, opt := range opts {
		if err := configure(opt, &o); err != nil {
			return o, err
		}
	}
	return o, nil
}

func stateOpts(opts []StateOption) (stateOptions, error) {
	return newOptions(opts, StateOption.configureState)
}

func applierOpts(opts []ApplierOption) (stateOptions, error) {
	return newOptions(opts, ApplierOption.configureApplier)
}

func listWatchOpts(opts []ListWatchOption) (stateOptions, error) {
	return newOptions(opts, ListWatchOption.configureListWatch)
}

// Bootstrap chooses how a State or a ListWatch bootstraps; default
// FullReplay.
func Bootstrap(m BootstrapMode) ReadOption {
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
func WithIndexers(resource string, indexers cache.Indexers) IndexerOption {
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
func WithHooks(h Hooks) ContractOption {
	return func(o *stateOptions) error {
		o.hooks = h
		return nil
	}
}

// StopOnViolation makes a breach of the contract fatal: Apply returns it
// as a *Violation and State.Run ends with it. By default violations are
// reported (Hooks.OnViolation, Stats) and the reader goes on.
func StopOnViolation() ContractOption {
	return func(o *stateOptions) error {
		o.stopOnViolation = true
		return nil
	}
}

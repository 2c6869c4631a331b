package consume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ErrStopped is returned by WaitForSync when Run ended before the
// bootstrap was complete.
var ErrStopped = errors.New("consume: the state stopped before it synced")

// State is the live state of one or more types, rebuilt from the stream
// and kept current: one client-go indexer per type, event handlers as a
// shared informer has them, and the contract checks of an Applier.
//
//	st, _ := client.NewState([]consume.Filter{{Resource: "configmaps"}})
//	go st.Run(ctx)
//	if err := st.WaitForSync(ctx); err != nil { … }
//	cms := listersv1.NewConfigMapLister(st.Indexer("configmaps"))
//
// Run bootstraps (see BootstrapMode) and then applies every new message
// as it is stored, from the sequence after the bootstrap's, on one
// ephemeral pull consumer (recreated from the next sequence if the server
// loses it).
//
// An object the bridge published truncated (too large for the stream) is
// held as published: apiVersion, kind and identifying metadata only; Events
// shows which (Event.Truncated).
type State struct {
	c    *Client
	fs   []filter
	mode BootstrapMode
	a    *Applier
	// stall and consumerHook are for tests: the reader's stallAfter, and
	// a change to each bootstrap's consumer before it is created.
	stall        time.Duration
	consumerHook func(*jetstream.ConsumerConfig)

	ran    atomic.Bool
	synced chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// NewState returns a State of the filters' types. Each filter names a
// distinct type; one with a namespace or a name restricts the state to
// those objects.
func (c *Client) NewState(filters []Filter, opts ...StateOption) (*State, error) {
	o, err := stateOpts(opts)
	if err != nil {
		return nil, err
	}
	return c.newState(filters, o)
}

func (c *Client) newState(filters []Filter, o stateOptions) (*State, error) {
	fs, err := parseFilters(filters)
	if err != nil {
		return nil, err
	}
	a, err := newApplier(c.dec, fs, o)
	if err != nil {
		return nil, err
	}
	return &State{c: c, fs: fs, mode: o.bootstrap, a: a, synced: make(chan struct{}), done: make(chan struct{})}, nil
}

// Indexer returns the indexer of the type named as in its Filter (nil for
// any other). It holds the typed objects; wrap it in a client-go lister.
func (s *State) Indexer(resource string) cache.Indexer { return s.a.Indexer(resource) }

// AddEventHandler adds a handler for the type named as in its Filter.
// Once synced, it first gets OnAdd(obj, true) for every object held; then
// every change: OnAdd(obj, false), OnUpdate(old, new), and OnDelete with
// the last known object, or a cache.DeletedFinalStateUnknown when the
// delete was inferred (finalstateunknown, a sweep, a name that now holds
// another uid). Handlers run on Run's goroutine and hold it up.
func (s *State) AddEventHandler(resource string, h cache.ResourceEventHandler) error {
	return s.a.AddEventHandler(resource, h)
}

// HasSynced reports whether the bootstrap is complete.
func (s *State) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// WaitForSync waits until the bootstrap is complete. It returns ctx's
// error, or ErrStopped (with Run's error) when Run ended first.
func (s *State) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrStopped, s.err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the Applier's counters.
func (s *State) Stats() Stats { return s.a.Stats() }

// Scope returns what the bridge watches the type for (see
// Applier.Scope).
func (s *State) Scope(resource string) (Scope, bool) { return s.a.Scope(resource) }

// Run bootstraps the state and keeps it current until ctx ends (then it
// returns nil) or something stops it: the stream is missing, a filter
// meets two versions of its type, a violation with StopOnViolation. It
// may be called once.
func (s *State) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("consume: State.Run called twice")
	}
	err := s.run(ctx)
	if ctx.Err() != nil {
		err = nil
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.done)
	return err
}

func (s *State) run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := s.bootstrapAndFollow(ctx)
		if !errors.Is(err, errConsumerLost) || s.HasSynced() {
			return err
		}
		// The bootstrap cannot go on where it stopped: the last message
		// per subject is a view of one moment. Start it over.
		logger.Info("Consumer lost during the bootstrap; starting over", "mode", s.mode, "err", err)
		if errors.Is(err, errStalled) && s.mode == LastPerSubject {
			// Seen in hack/bench/fanout: a last-per-subject consumer
			// created while the stream was written stopped after the
			// snapshot, and again when made anew; a replay from the
			// latest snapshot, the same state read another way, did not.
			logger.Info("The last-per-subject bootstrap stalled; replaying from the latest complete snapshot instead")
			s.mode = FullReplay
		}
		s.a.reset()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (s *State) bootstrapAndFollow(ctx context.Context) error {
	if s.mode == FullReplay {
		// The plan checks the end marker it starts from against them.
		markers, err := readTerms(ctx, s.c.js, s.c.stream, s.c.subjects)
		if err != nil {
			return err
		}
		s.a.AddTermMarkers(markers...)
	}
	b, err := s.plan(ctx)
	if err != nil {
		return err
	}
	if s.consumerHook != nil {
		s.consumerHook(&b.cfg)
	}
	r := &reader{js: s.c.js, stream: s.c.stream, cfg: b.cfg, resume: s.HasSynced(), stall: s.stall}
	if err := r.open(ctx); err != nil {
		return err
	}
	defer r.close(ctx)
	// Again now that the consumer exists: a marker stored meanwhile may
	// lie between a last message's term and its sequence, and the consumer
	// delivers only the newest marker.
	markers, err := readTerms(ctx, s.c.js, s.c.stream, s.c.subjects)
	if err != nil {
		return err
	}
	s.a.AddTermMarkers(markers...)
	klog.FromContext(ctx).V(2).Info("Bootstrapping", "mode", s.mode, "filters", b.cfg.FilterSubjects, "pending", r.cons.Pending, "streamLastSeq", r.cons.LastSeq)
	for _, m := range b.seed {
		if err := s.a.ApplyMsg(m.Sequence, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}); err != nil {
			return err
		}
	}
	if r.cons.Pending == 0 {
		s.sync(r)
	}
	for {
		wait := time.Duration(0)
		if !s.HasSynced() {
			wait = fetchWait
		}
		m, err := r.next(ctx, wait)
		if err != nil {
			return err
		}
		if m.Msg == nil {
			if err := s.idle(ctx, r); err != nil {
				return err
			}
			continue
		}
		if err := s.apply(b, m); err != nil {
			return err
		}
		if !s.HasSynced() && r.cons.Reached(m.meta) {
			s.sync(r)
		}
	}
}

// idle is the bootstrap's turn after a wait in vain: it has synced when
// nothing more is pending. The consumer's pending count may stay above
// zero (a message counted may be removed, expired or rolled up, before it
// is delivered), so the stream is asked too; and a consumer that delivers
// nothing although the stream holds more is replaced.
func (s *State) idle(ctx context.Context, r *reader) error {
	caught, err := r.caughtUp(ctx)
	if err == nil && !caught {
		caught, err = r.drained(ctx)
	}
	if err != nil {
		return err
	}
	if caught {
		s.sync(r)
		return nil
	}
	return r.replaceStalled(ctx)
}

// apply decodes and applies one message, unless the bootstrap plan skips
// it.
func (s *State) apply(b plan, m msg) error {
	seq := m.meta.Sequence.Stream
	ev, err := s.c.dec.decode(seq, m.natsMsg())
	if errors.Is(err, ErrUnsupportedContract) {
		return err
	}
	if err != nil {
		return s.a.undecodable(seq, m.Subject(), err)
	}
	if b.skip(ev) {
		s.a.skipped(seq)
		return nil
	}
	return s.a.Apply(ev)
}

// sync ends the bootstrap: handlers get the initial list, and a lost
// consumer is recreated from the next sequence from now on.
func (s *State) sync(r *reader) {
	if s.HasSynced() {
		return
	}
	r.resume = true
	s.a.EndInitialList()
	close(s.synced)
}

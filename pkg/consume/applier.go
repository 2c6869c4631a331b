package consume

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/nats-io/nats.go"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ErrAmbiguousVersion is returned when a filter without a version meets a
// second version of its type: the bridge publishes one resource under two
// versions (HorizontalPodAutoscalers v1 and v2, a CRD served at two
// versions), which one indexer cannot hold. Name the version.
var ErrAmbiguousVersion = errors.New("consume: one filter matches two versions of a type; name the version (resource.version.group)")

// Applier applies the events of a kubebridge stream, in stream order, to
// one client-go indexer per type, and calls the types' event handlers.
// It is the part of a State that does not read from NATS, for readers that
// bring their own messages (an informer, a test): feed it every message
// of its filters' subjects and of the term subject, in stream order.
//
// It follows the contract's rules (docs/contract.md §3, §7): added, updated and snapshot items upsert,
// deleted removes (the uid the key holds; another uid's delete is a
// no-op), a snapshot end removes every object of its type not seen since
// the matching begin and not listed as unpublished; an event of a deposed
// leader's term is ignored (the term rule). It checks the contract while
// it does (see ViolationKind) and does not apply an event that breaks it.
//
// Until EndInitialList it calls no handler; then every handler gets
// OnAdd(obj, true) for every object held, and later changes as they are
// applied. A handler added after that first gets the objects held.
// Handlers are called synchronously while the Applier is locked: they
// must not call into it.
type Applier struct {
	dec   *decoder
	hooks Hooks
	stop  bool

	// applying serializes Apply, so that it can let go of mu while the
	// sweep guard reads the stream: nothing else changes the types then.
	applying sync.Mutex
	// mu guards the state: readers (Stats, the handlers' callers) wait
	// for it, never for the network.
	mu     sync.Mutex
	types  []*typeState
	terms  shardTerms
	stats  Stats
	synced bool
	seed   maphash.Seed
	// keepOnSweep, when set, is asked before an end marker sweeps an
	// object: a reader behind the stream may have missed the object's
	// item because compaction removed it for newer messages of the
	// object, which it has yet to read (see ListWatch).
	keepOnSweep func(key string, obj any, end *Event) bool
}

// NewApplier returns an Applier for filters.
func (c *Client) NewApplier(filters []Filter, opts ...ApplierOption) (*Applier, error) {
	fs, err := parseFilters(filters)
	if err != nil {
		return nil, err
	}
	o, err := applierOpts(opts)
	if err != nil {
		return nil, err
	}
	return newApplier(c.dec, fs, o)
}

func newApplier(dec *decoder, fs []filter, o stateOptions) (*Applier, error) {
	a := &Applier{dec: dec, hooks: o.hooks, stop: o.stopOnViolation, seed: maphash.MakeSeed(), keepOnSweep: o.keepOnSweep,
		stats: Stats{Violations: map[ViolationKind]uint64{}}}
	for _, f := range fs {
		for _, t := range a.types {
			if t.f.ref.Group == f.ref.Group && t.f.ref.Resource == f.ref.Resource {
				return nil, fmt.Errorf("%w: %s and %s name one type", ErrBadFilter, t.f.ref, f.ref)
			}
		}
		indexers := cache.Indexers{}
		if !o.noNamespaceIndex {
			indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
		}
		for name, fn := range o.indexers[f.ref] {
			indexers[name] = fn
		}
		a.types = append(a.types, newTypeState(f, cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)))
	}
	for ref := range o.indexers {
		if a.typeOf(ref) == nil {
			return nil, fmt.Errorf("%w: indexers for %s, which no filter names", ErrBadOption, ref)
		}
	}
	return a, nil
}

func (a *Applier) typeOf(ref contract.Type) *typeState {
	for _, t := range a.types {
		if t.f.ref == ref {
			return t
		}
	}
	return nil
}

func (a *Applier) lookup(resource string) *typeState {
	ref, err := parseResource(resource)
	if err != nil {
		return nil
	}
	return a.typeOf(ref)
}

// Indexer returns the indexer of the type named as in its Filter, nil for
// a type no filter names. Wrap it in a typed lister:
// listersv1.NewConfigMapLister(a.Indexer("configmaps")).
func (a *Applier) Indexer(resource string) cache.Indexer {
	if t := a.lookup(resource); t != nil {
		return t.indexer
	}
	return nil
}

// Scope returns what the bridge watches the type named as in its Filter
// for, as the last snapshot begin marker applied says; false before any
// (or for a type no filter names).
func (a *Applier) Scope(resource string) (Scope, bool) {
	t := a.lookup(resource)
	if t == nil {
		return Scope{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.scope, t.begun
}

// Stats returns a copy of the counters.
func (a *Applier) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats.clone()
	s.Term = max(s.Term, a.terms.current(s.LastSeq+1))
	return s
}

// AddTerms records term markers of the unsharded bridge at these stream
// sequences, read apart from the messages applied: a reader that starts
// after a marker, or sees only the last message per subject, learns the
// terms this way. AddTermMarkers does the same for markers of any shard.
func (a *Applier) AddTerms(seqs ...uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range seqs {
		a.terms.of(contract.Shard{}).markers.Add(s)
	}
}

// AddTermMarkers records term markers, each of its shard (see AddTerms).
func (a *Applier) AddTermMarkers(markers ...TermMarker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.terms.add(markers...)
}

// ApplyMsg decodes a message stored at stream sequence seq and applies it.
// A message that does not decode is reported as Undecodable and skipped;
// a term marker of a contract major version this package does not know
// returns ErrUnsupportedContract, which stops the reader.
func (a *Applier) ApplyMsg(seq uint64, msg *nats.Msg) error {
	ev, err := a.dec.decode(seq, msg)
	if errors.Is(err, ErrUnsupportedContract) {
		return err
	}
	if err != nil {
		return a.undecodable(seq, msg.Subject, err)
	}
	return a.Apply(ev)
}

func (a *Applier) undecodable(seq uint64, subject string, err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.LastSeq = max(a.stats.LastSeq, seq)
	return a.report(Violation{Kind: Undecodable, Seq: seq, Subject: subject, Detail: err.Error(), Err: err})
}

// skipped records a message passed over on purpose.
func (a *Applier) skipped(seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.LastSeq = max(a.stats.LastSeq, seq)
}

// Apply applies one decoded event. It returns an error only for what
// stops the reader: ErrAmbiguousVersion, or a *Violation with
// StopOnViolation.
func (a *Applier) Apply(ev *Event) error {
	a.applying.Lock()
	defer a.applying.Unlock()
	// The objects an end marker sweeps; nil: those it finds (no guard).
	var sweep []sweepCandidate
	if ev.Verb == SnapshotEnd && a.keepOnSweep != nil {
		sweep = a.guardSweep(ev)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.LastSeq = max(a.stats.LastSeq, ev.Seq)
	terms := a.terms.of(ev.Shard)
	if ev.Verb == Term {
		terms.markers.Add(ev.Seq)
		return nil
	}
	t := a.route(ev)
	if terms.markers.Foreign(ev.Term, ev.Seq) {
		if t != nil {
			return a.report(Violation{Kind: Foreign, Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID(),
				Detail: fmt.Sprintf("term %d: no term marker of the cluster is stored at that sequence", ev.Term)})
		}
		return nil
	}
	// The rule runs on every event, so that the term of one outside the
	// filters counts too.
	if terms.fenced(ev) {
		if t != nil {
			a.stats.Fenced++
			if a.hooks.OnFenced != nil {
				a.hooks.OnFenced(ev)
			}
		}
		return nil
	}
	if t == nil {
		return nil
	}
	if t.version == "" {
		t.version = ev.Resource.Version
	} else if t.version != ev.Resource.Version {
		return fmt.Errorf("%w: %s: %s and %s", ErrAmbiguousVersion, t.f.ref, t.version, ev.Resource.Version)
	}
	n := notifier{a: a, t: t}
	var v *Violation
	switch ev.Verb {
	case SnapshotBegin:
		v = t.begin(ev)
	case SnapshotEnd:
		v = t.end(ev, sweep, n)
	default:
		v = t.object(ev, a.idHash(ev.CloudEvent.ID()), n)
	}
	if v != nil {
		return a.report(*v)
	}
	return nil
}

// guardSweep returns the objects the end marker ev sweeps: those it would
// sweep that keepOnSweep does not keep. keepOnSweep reads the stream, so
// mu is not held meanwhile; applying is, so these are still the objects
// the end then sweeps.
func (a *Applier) guardSweep(ev *Event) []sweepCandidate {
	a.mu.Lock()
	t := a.route(ev)
	var candidates []sweepCandidate
	if t != nil && a.terms.of(ev.Shard).leads(ev.Term, ev.Seq) {
		candidates = t.sweepCandidates(ev)
	}
	a.mu.Unlock()
	sweep := make([]sweepCandidate, 0, len(candidates))
	for _, c := range candidates {
		if !a.keepOnSweep(c.key, c.obj, ev) {
			sweep = append(sweep, c)
		}
	}
	return sweep
}

// route finds the type an event belongs to; nil when no filter selects
// it. Snapshot markers frame a whole type, so they count for a filter of
// one namespace too.
func (a *Applier) route(ev *Event) *typeState {
	for _, t := range a.types {
		if !t.f.ref.Covers(typeOf(ev.Resource)) {
			continue
		}
		if ev.Verb.IsMarker() || t.f.matches(ev) {
			return t
		}
	}
	return nil
}

func (a *Applier) idHash(id string) uint64 { return maphash.String(a.seed, id) }

// report counts and passes on a violation; it returns it when it stops
// the reader.
func (a *Applier) report(v Violation) error {
	a.stats.Violations[v.Kind]++
	if a.hooks.OnViolation != nil {
		a.hooks.OnViolation(v)
	}
	if a.stop && v.Kind.Breach() {
		return &v
	}
	return nil
}

// reset forgets everything applied, for a bootstrap that starts over. No
// handler has been called yet.
func (a *Applier) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, t := range a.types {
		if err := t.indexer.Replace(nil, ""); err != nil {
			// Replace only fails on a key function error, impossible
			// with an empty list.
			panic(err)
		}
		fresh := newTypeState(t.f, t.indexer)
		fresh.handlers = t.handlers
		a.types[i] = fresh
	}
	a.terms = shardTerms{}
	a.stats = Stats{Violations: map[ViolationKind]uint64{}}
}

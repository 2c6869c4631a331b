package e2e

import (
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// The robustness test (TestRobustness) runs the bridge under a random,
// seeded schedule of faults while a traffic generator writes, records
// every version of every object the apiserver made (the history), then
// reads the stream in full and checks every message against the history.
// These are the types its parts share: the history the recorder fills,
// the type rules the validators apply, the violations they report, and
// the timeline the nemesis and the sampler keep for the report.

// histVersion is one version of one object, as the test's own watch of
// the type (unfiltered, every namespace of the run) delivered it.
type histVersion struct {
	typ       string // the type's subject prefix (harness.typeSubject)
	uid       string
	namespace string
	name      string
	rv        string          // for Deleted, the resourceVersion of the deletion
	verb      watch.EventType // Added, Modified or Deleted
	object    map[string]any  // as the watch delivered it, not projected
	at        time.Time       // when the test's watch received it
}

// write is one request of the traffic generator and its outcome: the
// object the apiserver returned, or the error (which may hide a write
// that was made: the recorded versions say).
type write struct {
	at        time.Time
	op        string // create, update-data, update-labels, update-annotations, flip, delete, big, delete-namespace, ...
	typ       string
	namespace string
	name      string
	uid       string // of the object returned (or, for a delete, the precondition's)
	rv        string // of the object returned; empty for deletes and errors
	err       string // empty when it succeeded
}

// history is what the apiserver did during a run.
type history struct {
	// versions of every object, per type in the order its watch
	// delivered them (which is resourceVersion order).
	versions []histVersion
	writes   []write
}

// typeRules is what the bridge was configured to publish of one type, as
// the validators need it, written from the configuration independently
// of the bridge's code.
type typeRules struct {
	typ string // the type's subject prefix
	// inScope reports whether an object of the type is in the bridge's
	// scope: its label selector, its namespaces.
	inScope func(obj map[string]any) bool
	// project is what the bridge publishes of an object: a copy without
	// metadata.managedFields, the last-applied annotation and the type's
	// ignoreFields.
	project func(obj map[string]any) map[string]any
}

// violation is one message (or one recorded version) breaking one of the
// stream's promises.
type violation struct {
	check   string // valid, ordered, reliable, oldObjects, unique, atomic, resumable
	uid     string // the object's, when the violation is about one
	subject string
	seq     uint64 // the message's stream sequence, 0 when about a missing one
	detail  string
}

// faultSpan is one fault the nemesis injected: from start until it healed
// at end (the zero time: never healed before the run ended).
type faultSpan struct {
	name   string // kill-leader, stop-leader, kill-nats, partition-nats, latency, restart-apiserver, compaction, stepdown, both-down, kill-in-snapshot
	detail string
	start  time.Time
	end    time.Time
}

// procSample is one reading of one bridge process.
type procSample struct {
	at         time.Time
	bridge     string
	rssBytes   float64
	goroutines float64
}

// lagPoint is how long after the test's watch saw a version the stream
// stored its event.
type lagPoint struct {
	at  time.Time // when the stream stored it
	lag time.Duration
}

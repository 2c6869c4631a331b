package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The spans in which a bridge could not watch a type. The apiserver's
// restarts and the compaction fault break every informer's watch; an
// informer whose resourceVersion the apiserver no longer serves relists,
// and a relist shows only the newest version of each object, so the
// versions made meanwhile and superseded before the list were never the
// bridge's to publish (validateStreamBlind). How long that lasts is the
// reflector's to decide: it retries with a jittered backoff that grows
// with each failure and resets only after two calm minutes, so after a
// run of faults a type can relist 15 s after the apiserver is back
// (seed 11755: the Widgets a few seconds after the fixed 5 s window).
// The replicas say when they listed: client-go's reflector logs "Caches
// populated" at V(2), and they run at BRIDGE_LOG_VERBOSITY=6.
//
// A fault's span starts earlier when a replica's watch was behind: its
// relist starts from the last resourceVersion its watch delivered (the
// bridge logs "Relisting" with it, pkg/informers/relists.go), so every
// version made after that one was as invisible to it as one made during
// the fault (seed 579152: a version 3 s before the apiserver's restart,
// beyond the 2 s margin).

// blindSpan is a time one type's informers could not watch.
type blindSpan struct {
	typ        string // the type's subject prefix; "" for every type
	start, end time.Time
	// from is the oldest resourceVersion a relist that ended it started
	// from, if a process logged one: its watch had delivered up to it.
	from string
}

// relistGrace is how long after a fault healed a type counts as blind
// when no replica logged a relist of it: the informers reconnect and
// list in that time on a quiet run.
const relistGrace = 5 * time.Second

// maxRelistDelay bounds how long after a fault a logged list is taken as
// its relist: the reflector's backoff is capped at 30 s, with a jitter of
// up to as much again.
const maxRelistDelay = time.Minute

// populatedLine is client-go's reflector's line for a completed list
// (reflector.go, "Caches populated"), in klog's text format: the
// header's month, day and time, and the type's description.
var populatedLine = regexp.MustCompile(`(?m)^I(\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ reflector\.go:\d+\] "Caches populated" type="([^"]+)"`)

// relist is one list a bridge process completed.
type relist struct {
	at   time.Time
	what string // the reflector's type description
}

// relistingLine is the bridge's line for a relist's start, with the
// resourceVersion it lists from (pkg/informers/relists.go).
var relistingLine = regexp.MustCompile(`(?m)^I(\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ \S+\] "Relisting: [^"]*"(.*)$`)

var (
	resourceKey = regexp.MustCompile(` resource="([^"]+)"`)
	fromRVKey   = regexp.MustCompile(` fromResourceVersion="([^"]+)"`)
)

// relistFrom is one relist a bridge process started: of which resource
// (the bridge's name for it, as informers.Resource.String), and from the
// last resourceVersion its watch had delivered.
type relistFrom struct {
	at       time.Time
	resource string
	rv       string
}

// klogTime is the time of klog's header "MMDD hh:mm:ss.uuuuuu", which
// has no year: it is taken from near, a time in the run.
func klogTime(header string, near time.Time) (time.Time, error) {
	return time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s", near.Year(), header), time.Local)
}

// relistsFromIn reads the relists a bridge's output logged starting.
func relistsFromIn(output string, near time.Time) []relistFrom {
	var out []relistFrom
	for _, m := range relistingLine.FindAllStringSubmatch(output, -1) {
		at, err := klogTime(m[1], near)
		res, rv := resourceKey.FindStringSubmatch(m[2]), fromRVKey.FindStringSubmatch(m[2])
		if err != nil || res == nil || rv == nil {
			continue
		}
		out = append(out, relistFrom{at: at, resource: res[1], rv: rv[1]})
	}
	return out
}

// relistsIn reads the lists a bridge's output logged. klog's header has
// no year: it is taken from near, a time in the run.
func relistsIn(output string, near time.Time) []relist {
	var out []relist
	for _, m := range populatedLine.FindAllStringSubmatch(output, -1) {
		at, err := klogTime(m[1], near)
		if err != nil {
			continue
		}
		out = append(out, relist{at: at, what: m[2]})
	}
	return out
}

// robustProc is one bridge process of the run and when it started.
type robustProc struct {
	b       *bridge
	started time.Time
}

// procLists is what blindSpansOf needs of a process: when it started,
// the lists it logged, and the relists it logged starting.
type procLists struct {
	started time.Time
	relists []relist
	from    []relistFrom
}

// madeAfter is when the history saw the first version of type typ newer
// than resourceVersion rv, if any.
type madeAfter func(typ, rv string) (time.Time, bool)

// blindSpansOf is, for every fault that broke the informers' watches and
// every type, the span from the fault's start until the type had listed
// again: the latest of the processes' first lists after the fault healed,
// when it came before the next such fault and within maxRelistDelay; and
// at least relistGrace after the healing. A process started after the
// healing lists at its start, not because of the fault. The span starts
// at the fault, or earlier where a process's relist after it started
// from a resourceVersion older than the fault: when the first version
// after that one was made.
func blindSpansOf(faults []faultSpan, types []robustType, procs []procLists, after madeAfter) []blindSpan {
	var blinding []faultSpan
	for _, f := range faults {
		if f.name == "restart-apiserver" || f.name == "compaction" {
			blinding = append(blinding, f)
		}
	}
	var out []blindSpan
	for i, f := range blinding {
		if f.end.IsZero() { // never healed: blind until the run ended
			for _, t := range types {
				out = append(out, blindSpan{typ: t.typ, start: f.start})
			}
			continue
		}
		limit := f.end.Add(maxRelistDelay)
		if i+1 < len(blinding) && blinding[i+1].start.Before(limit) {
			limit = blinding[i+1].start
		}
		for _, t := range types {
			span := blindSpan{typ: t.typ, start: f.start, end: f.end.Add(relistGrace)}
			for _, p := range procs {
				if p.started.After(f.end) {
					continue
				}
				if at, ok := firstListAfter(p.relists, t.reflectorType, f.end, limit); ok && at.After(span.end) {
					span.end = at
				}
				if rv, ok := firstRelistFrom(p.from, t.resourceName(), f.start, limit); ok {
					if span.from == "" || cmpRV(rv, span.from) < 0 {
						span.from = rv
					}
					if at, ok := after(t.typ, rv); ok && at.Before(span.start) {
						span.start = at
					}
				}
			}
			out = append(out, span)
		}
	}
	return out
}

// firstListAfter is the first list of type what after from, if it came
// before limit.
func firstListAfter(relists []relist, what string, from, limit time.Time) (time.Time, bool) {
	for _, r := range relists {
		if r.what == what && r.at.After(from) {
			return r.at, r.at.Before(limit)
		}
	}
	return time.Time{}, false
}

// firstRelistFrom is the resourceVersion the first relist of resource
// after from started from, if it started before limit.
func firstRelistFrom(relists []relistFrom, resource string, from, limit time.Time) (string, bool) {
	for _, r := range relists {
		if r.resource == resource && r.at.After(from) {
			return r.rv, r.at.Before(limit)
		}
	}
	return "", false
}

// blindSpans are the run's blind spans, from its faults and its bridge
// processes' logs.
func (w *world) blindSpans() []blindSpan {
	procs := make([]procLists, 0, len(w.procs))
	for _, p := range w.procs {
		out := p.b.output()
		procs = append(procs, procLists{started: p.started, relists: relistsIn(out, w.began), from: relistsFromIn(out, w.began)})
	}
	spans := blindSpansOf(w.faults, w.types, procs, w.hist.madeAfter)
	var lines []string
	for _, s := range spans {
		line := fmt.Sprintf("%s %s..%s", s.typ, w.offset(s.start), w.offset(s.end))
		if s.from != "" {
			line += " (relisted from rv " + s.from + ")"
		}
		lines = append(lines, line)
	}
	w.t.Logf("robustness: blind spans (fault start until the type listed again): %s", strings.Join(lines, "; "))
	return spans
}

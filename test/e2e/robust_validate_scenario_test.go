package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// A small builder of synthetic histories and streams for the validators'
// unit tests: the history is histVersions as the test's watch records
// them; the stream is a list of message specs that a test may break
// before build (robust_validate_stream_test.go) encodes them.

const (
	valCM       = "kb.c.core.v1.configmaps"
	valWidget   = "kb.c.example_com.v1.widgets"
	valOut      = "robustness.kubebridge.io/out"
	valIgnored  = "robustness.kubebridge.io/ignored"
	valFirstRV  = 100
	valTickStep = 100 * time.Millisecond
)

// valTestRules are the run's rules: ConfigMaps scoped by a label selector
// and an ignored annotation, Widgets without rules.
func valTestRules() map[string]typeRules {
	project := func(ignored bool) func(map[string]any) map[string]any {
		return func(obj map[string]any) map[string]any {
			c, _ := jsonValue(obj).(map[string]any)
			meta, _ := c["metadata"].(map[string]any)
			delete(meta, "managedFields")
			if ann, ok := meta["annotations"].(map[string]any); ok {
				delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
				if ignored {
					delete(ann, valIgnored)
				}
			}
			return c
		}
	}
	return map[string]typeRules{
		valCM: {typ: valCM, project: project(true), inScope: func(obj map[string]any) bool {
			meta, _ := obj["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			_, out := labels[valOut]
			return !out
		}},
		valWidget: {typ: valWidget, project: project(false), inScope: func(map[string]any) bool { return true }},
	}
}

// valScenario is a history and a stream being written.
type valScenario struct {
	t     *testing.T
	clock time.Time
	rv    int
	hist  history
	cur   map[string]int // object name → index of its current version in hist.versions
	specs []*valSpec
	rules map[string]typeRules
}

// valSpec is one message to be: built by build, once breaks have changed
// the list.
type valSpec struct {
	ceType    string
	typ       string
	v         int // the version it publishes (index in hist.versions); -1: none
	old       int // updated: the oldObject's version; -1: none
	rv        string
	coalesced int
	fsu       bool
	truncated bool
	leave     bool // a deleted of a leave, carrying the previous content (as a watch with a label selector reports it)
	object    any  // when set, published in place of the version's projection
	term      int  // the term (1, 2, …) it is published in; a term marker's own
	sid       string
	count     int
	at        time.Time
	label     string
}

func newValScenario(t *testing.T) *valScenario {
	return &valScenario{t: t, clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), rv: valFirstRV, cur: map[string]int{}, rules: valTestRules()}
}

func (s *valScenario) tick() time.Time {
	s.clock = s.clock.Add(valTickStep)
	return s.clock
}

// wait lets d pass.
func (s *valScenario) wait(d time.Duration) { s.clock = s.clock.Add(d) }

// record adds a version of name made from obj, at a new resourceVersion.
func (s *valScenario) record(typ, name string, verb watch.EventType, obj map[string]any) int {
	s.rv++
	meta := obj["metadata"].(map[string]any)
	meta["resourceVersion"] = strconv.Itoa(s.rv)
	s.hist.versions = append(s.hist.versions, histVersion{typ: typ, uid: meta["uid"].(string), namespace: "n1", name: name,
		rv: strconv.Itoa(s.rv), verb: verb, object: obj, at: s.tick()})
	s.cur[name] = len(s.hist.versions) - 1
	return len(s.hist.versions) - 1
}

// create makes an object of typ named name; labels may take it out of
// scope.
func (s *valScenario) create(typ, name string, labels map[string]any) int {
	meta := map[string]any{"name": name, "namespace": "n1", "uid": fmt.Sprintf("uid-%s-%d", name, s.rv+1), "labels": labels,
		"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"}, "managedFields": []any{map[string]any{"manager": "test"}}}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"k": "0"}}
	if typ == valWidget {
		obj = map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": map[string]any{"k": "0"}}
		meta["generation"] = int64(1)
	}
	return s.record(typ, name, watch.Added, obj)
}

// update makes a new version of name, changed by change.
func (s *valScenario) update(name string, change func(obj map[string]any)) int {
	prev := s.hist.versions[s.cur[name]]
	obj := jsonValue(prev.object).(map[string]any)
	change(obj)
	return s.record(prev.typ, name, watch.Modified, obj)
}

// Changes for update.
func setData(v string) func(map[string]any) {
	return func(obj map[string]any) {
		key := "data"
		if obj["kind"] == "Widget" {
			key = "spec"
		}
		obj[key].(map[string]any)["k"] = v
	}
}

func setMetaField(field, key string, v any) func(map[string]any) {
	return func(obj map[string]any) {
		m := obj["metadata"].(map[string]any)
		f, _ := m[field].(map[string]any)
		if f == nil {
			f = map[string]any{}
			m[field] = f
		}
		if v == nil {
			delete(f, key)
		} else {
			f[key] = v
		}
	}
}

// remove deletes name: a Deleted version with its last state.
func (s *valScenario) remove(name string) int {
	prev := s.hist.versions[s.cur[name]]
	return s.record(prev.typ, name, watch.Deleted, jsonValue(prev.object).(map[string]any))
}

// msg adds a message of version v (-1: none) published in term.
func (s *valScenario) msg(term int, ceType string, v int) *valSpec {
	sp := &valSpec{ceType: ceType, v: v, old: -1, term: term, at: s.tick()}
	if v >= 0 {
		sp.typ = s.hist.versions[v].typ
	}
	s.specs = append(s.specs, sp)
	return sp
}

func (s *valScenario) termMarker(term int) { s.msg(term, contract.TypeTerm, -1) }

// begin starts snapshot sid of typ; end ends it with count items.
func (s *valScenario) begin(term int, typ, sid string) {
	sp := s.msg(term, contract.TypeSnapshotBegin, -1)
	sp.typ, sp.sid = typ, sid
}

func (s *valScenario) end(term int, typ, sid string, count int) *valSpec {
	sp := s.msg(term, contract.TypeSnapshotEnd, -1)
	sp.typ, sp.sid, sp.count = typ, sid, count
	return sp
}

func (s *valScenario) item(term int, sid string, v int) *valSpec {
	sp := s.msg(term, contract.TypeSnapshotItem, v)
	sp.sid = sid
	return sp
}

func (sp *valSpec) with(f func(*valSpec)) *valSpec { f(sp); return sp }

// find is the index of the spec labelled label.
func (s *valScenario) find(label string) int {
	for i, sp := range s.specs {
		if sp.label == label {
			return i
		}
	}
	s.t.Fatalf("no message labelled %q", label)
	return -1
}

// insertAfter puts sp right after the message labelled label.
func (s *valScenario) insertAfter(label string, sp *valSpec) {
	s.specs = slices.Insert(s.specs, s.find(label)+1, sp)
}

// drop removes the message labelled label.
func (s *valScenario) drop(label string) *valSpec {
	i := s.find(label)
	sp := s.specs[i]
	s.specs = slices.Delete(s.specs, i, i+1)
	return sp
}

// spec is the message labelled label.
func (s *valScenario) spec(label string) *valSpec { return s.specs[s.find(label)] }

// seqOf is the stream sequence build gives the message labelled label.
func (s *valScenario) seqOf(label string) uint64 { return uint64(s.find(label) + 1) }

// uidOf is the uid of the object named name.
func (s *valScenario) uidOf(name string) string { return s.hist.versions[s.cur[name]].uid }

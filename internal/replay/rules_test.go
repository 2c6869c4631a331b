package replay

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// data sets the data of the last message.
func (s *stream) data(d string) { s.msgs[len(s.msgs)-1].Data = []byte(d) }

// cmJSON is a ConfigMap as an event's data holds it.
func cmJSON(name, uid, rv, color string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"` + name + `","uid":"` + uid +
		`","resourceVersion":"` + rv + `"},"data":{"color":"` + color + `"}}`
}

func TestBeginMarkerScope(t *testing.T) {
	s := &stream{t: t}
	h := nats.Header{}
	h.Set("ce-snapshotid", "s1")
	h.Set("ce-"+contract.ExtScopeNamespaces, "a,b")
	h.Set("ce-"+contract.ExtScopeMatch, "object.metadata.labels['tier'] == 'frontend'")
	h.Set("ce-"+contract.ExtScopeIgnoreFields, `[["status"],["metadata","annotations","example.com/heartbeat"]]`)
	s.add(contract.TypeSnapshotBegin, typ+"._snapshot.begin", h)
	st := s.mustReplay()
	want := Scope{Namespaces: []string{"a", "b"}, Match: "object.metadata.labels['tier'] == 'frontend'",
		IgnoreFields: [][]string{{"status"}, {"metadata", "annotations", "example.com/heartbeat"}}}
	if got := st.Scopes[typ]; !reflect.DeepEqual(got, want) {
		t.Errorf("scope %+v, want %+v", got, want)
	}
	// The next begin marker says the scope now.
	s.begin("s2")
	if got := s.mustReplay().Scopes[typ]; !reflect.DeepEqual(got, Scope{}) {
		t.Errorf("scope %+v after a begin marker without one", got)
	}
	for _, bad := range []string{"status", `[[]]`, `[["a"],[1]]`} {
		s := &stream{t: t}
		h := nats.Header{}
		h.Set("ce-snapshotid", "s1")
		h.Set("ce-"+contract.ExtScopeIgnoreFields, bad)
		s.add(contract.TypeSnapshotBegin, typ+"._snapshot.begin", h)
		if _, err := s.replay(); err == nil {
			t.Errorf("%s %q accepted", contract.ExtScopeIgnoreFields, bad)
		}
	}
}

// An object that leaves match is deleted, and comes back as added with a
// newer resourceVersion when it enters it again (contract §12).
func TestObjectEntersMatchAgain(t *testing.T) {
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10")
	s.obj(contract.TypeDeleted, "a", "u1", "12")
	s.obj(contract.TypeAdded, "a", "u1", "15")
	s.obj(contract.TypeUpdated, "a", "u1", "16")
	st := s.mustReplay()
	if len(st.Regressions) > 0 {
		t.Errorf("regressions: %v", st.Regressions)
	}
	if o, ok := st.Objects[subj("a")]; !ok || o.ResourceVersion != "16" {
		t.Errorf("a = %+v (present %v), want it at 16", o, ok)
	}
	// Back at its delete's version, or older: a late state.
	s.obj(contract.TypeDeleted, "a", "u1", "17")
	s.obj(contract.TypeAdded, "a", "u1", "17")
	s.obj(contract.TypeAdded, "a", "u1", "14")
	st = s.mustReplay()
	if len(st.Regressions) != 2 || !strings.Contains(st.Regressions[0], "after the deleted event") || !strings.Contains(st.Regressions[1], "rv 14 after 17") {
		t.Errorf("regressions = %v", st.Regressions)
	}
}

func TestPatches(t *testing.T) {
	const good = `[{"op":"replace","path":"/metadata/resourceVersion","value":"11"},{"op":"replace","path":"/data/color","value":"green"}]`
	s := &stream{t: t}
	s.obj(contract.TypeAdded, "a", "u1", "10")
	s.data(`{"object":` + cmJSON("a", "u1", "10", "blue") + `}`)
	// patch: true, oldObject: false.
	s.obj(contract.TypeUpdated, "a", "u1", "11")
	s.data(`{"object":` + cmJSON("a", "u1", "11", "green") + `,"patch":` + good + `}`)
	// Both, and an update without a patch.
	s.obj(contract.TypeUpdated, "a", "u1", "12")
	s.data(`{"object":` + cmJSON("a", "u1", "12", "red") + `,"oldObject":` + cmJSON("a", "u1", "11", "green") +
		`,"patch":[{"op":"replace","path":"/metadata/resourceVersion","value":"12"},{"op":"replace","path":"/data/color","value":"red"}]}`)
	s.obj(contract.TypeUpdated, "a", "u1", "13")
	s.data(`{"object":` + cmJSON("a", "u1", "13", "red") + `,"oldObject":` + cmJSON("a", "u1", "12", "red") + `}`)
	st := s.mustReplay()
	if st.Patches != 2 || len(st.PatchMismatches) > 0 {
		t.Fatalf("%d patches, mismatches %v", st.Patches, st.PatchMismatches)
	}

	// A patch that gives another object than the one published, one
	// whose base is not the object held, one that does not apply, and
	// one on an added event.
	s.obj(contract.TypeUpdated, "a", "u1", "14")
	s.data(`{"object":` + cmJSON("a", "u1", "14", "red") + `,"patch":[{"op":"replace","path":"/metadata/resourceVersion","value":"14"},{"op":"replace","path":"/data/color","value":"blue"}]}`)
	s.obj(contract.TypeUpdated, "a", "u1", "15")
	s.data(`{"object":` + cmJSON("a", "u1", "15", "green") + `,"oldObject":` + strings.Replace(cmJSON("a", "u1", "12", "blue"), `"data":{`, `"data":{"x":"1",`, 1) +
		`,"patch":[{"op":"replace","path":"/metadata/resourceVersion","value":"15"},{"op":"replace","path":"/data/color","value":"green"},{"op":"remove","path":"/data/x"}]}`)
	s.obj(contract.TypeUpdated, "a", "u1", "16")
	s.data(`{"object":` + cmJSON("a", "u1", "16", "green") + `,"patch":[{"op":"remove","path":"/spec"}]}`)
	s.obj(contract.TypeAdded, "b", "u2", "17")
	s.data(`{"object":` + cmJSON("b", "u2", "17", "green") + `,"patch":[]}`)
	st = s.mustReplay()
	want := []string{"seq 5 ", "seq 6 ", "seq 7 ", "seq 8 "}
	var got []string
	for _, m := range st.PatchMismatches {
		got = append(got, m[:len("seq 5 ")])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("mismatches %q, want one each at %q", st.PatchMismatches, want)
	}
	for i, part := range []string{"applied to the object held", "applied to the object held", "applied to the object held", "a patch on a " + contract.TypeAdded} {
		if !strings.Contains(st.PatchMismatches[i], part) {
			t.Errorf("mismatch %q does not say %q", st.PatchMismatches[i], part)
		}
	}
	// The state comes from object: every update applied.
	if o := st.Objects[subj("a")]; o.ResourceVersion != "16" || len(st.Regressions) > 0 {
		t.Errorf("a at %s, regressions %v", o.ResourceVersion, st.Regressions)
	}
}

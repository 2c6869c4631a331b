package contract_test

import (
	"errors"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

func TestParseShard(t *testing.T) {
	for s, want := range map[string]contract.Shard{
		"0/1":  {},
		"0/3":  {Index: 0, Count: 3},
		"2/3":  {Index: 2, Count: 3},
		"9/10": {Index: 9, Count: 10},
	} {
		got, err := contract.ParseShard(s)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %+v, %v, want %+v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("ParseShard(%q).String() = %q", s, got.String())
		}
	}
	for _, bad := range []string{"", "1", "3/3", "-1/3", "1/0", "0/0", "1/-2", "01/3", "0/03", "1/+3", "+1/3", "1/3/4", " 1/3", "a/b"} {
		if got, err := contract.ParseShard(bad); !errors.Is(err, contract.ErrBadShard) {
			t.Errorf("ParseShard(%q) = %+v, %v, want ErrBadShard", bad, got, err)
		}
	}
}

// An unsharded bridge's subjects do not change; a shard's markers and term
// have subjects of their own, which the wildcards readers use cover.
func TestShardSubjects(t *testing.T) {
	s := contract.Subjects{Prefix: "kb", Cluster: "c"}
	for _, unsharded := range []contract.Subjects{s, s.OfShard(contract.Shard{Index: 0, Count: 1})} {
		if got := unsharded.SnapshotBegin(configMaps); got != "kb.c.core.v1.configmaps._snapshot.begin" {
			t.Errorf("unsharded begin %q", got)
		}
		if got := unsharded.Term(); got != "kb.c._term" {
			t.Errorf("unsharded term %q", got)
		}
	}
	sh := s.OfShard(contract.Shard{Index: 1, Count: 3})
	for got, want := range map[string]string{
		sh.SnapshotBegin(configMaps):      "kb.c.core.v1.configmaps._snapshot.1-of-3.begin",
		sh.SnapshotEnd(configMaps):        "kb.c.core.v1.configmaps._snapshot.1-of-3.end",
		sh.Term():                         "kb.c._term.1-of-3",
		sh.Object(configMaps, "web", "a"): "kb.c.core.v1.configmaps.web.a",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	for _, subject := range []string{sh.SnapshotBegin(configMaps), sh.SnapshotEnd(configMaps), s.SnapshotBegin(configMaps)} {
		if !subjectMatches(s.Markers(configMaps), subject) || !subjectMatches(s.AllMarkers(), subject) {
			t.Errorf("%s is not matched by %s or %s", subject, s.Markers(configMaps), s.AllMarkers())
		}
	}
	for _, subject := range []string{sh.Term(), s.Term()} {
		n := 0
		for _, f := range s.Terms() {
			if subjectMatches(f, subject) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s matches %d of %v, want exactly one", subject, n, s.Terms())
		}
	}
	if subjectMatches(s.Markers(configMaps), s.Object(configMaps, "web", "a")) {
		t.Error("Markers matches an object subject")
	}
}

func TestParseShardSubjects(t *testing.T) {
	s := contract.Subjects{Prefix: "org.kb", Cluster: "eu-1"}
	two := contract.Shard{Index: 2, Count: 5}
	sh := s.OfShard(two)
	for subject, want := range map[string]contract.Subject{
		sh.Term():                       {Kind: contract.TermSubject, Shard: two},
		sh.SnapshotBegin(widgets):       {Kind: contract.BeginSubject, Type: widgets, Shard: two},
		sh.SnapshotEnd(configMaps):      {Kind: contract.EndSubject, Type: configMaps, Shard: two},
		sh.Object(configMaps, "w", "a"): {Kind: contract.ObjectSubject, Type: configMaps, Namespace: "w", Name: "a"},
	} {
		// Any Subjects of the cluster reads every shard's subjects.
		for _, reader := range []contract.Subjects{s, sh, s.OfShard(contract.Shard{Index: 0, Count: 2})} {
			got, err := reader.Parse(subject)
			if err != nil || got != want {
				t.Errorf("Parse(%q) = %+v, %v, want %+v", subject, got, err, want)
			}
		}
	}
	for _, subject := range []string{
		"org.kb.eu-1._term.0-of-1",                               // 0/1 has no token
		"org.kb.eu-1._term.3-of-3",                               // no such shard
		"org.kb.eu-1._term.01-of-3",                              // not canonical
		"org.kb.eu-1._term.1-of-3.x",                             // too long
		"org.kb.eu-1.core.v1.configmaps._snapshot.0-of-1.begin",  // 0/1 has no token
		"org.kb.eu-1.core.v1.configmaps._snapshot.1-of-3.middle", // neither begin nor end
		"org.kb.eu-1.core.v1.configmaps._snapshot.x.begin",       // no shard
		"org.kb.eu-1.core.v1.configmaps.web.1-of-3.begin",        // not a marker
	} {
		if got, err := s.Parse(subject); !errors.Is(err, contract.ErrBadToken) {
			t.Errorf("Parse(%q) = %+v, %v, want ErrBadToken", subject, got, err)
		}
	}
}

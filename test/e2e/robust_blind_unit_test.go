package e2e

import (
	"testing"
	"time"
)

// TestRelistsIn reads the lists a bridge logged from klog's text format,
// as client-go's reflector writes them, and nothing else.
func TestRelistsIn(t *testing.T) {
	out := `I1128 10:41:53.184695   17993 reflector.go:507] "Caches populated" type="*v1.ConfigMap" reflector="pkg/mod/k8s.io/client-go@v0.37.2/tools/cache/reflector.go:343"
I1128 10:41:53.200000   17993 leader.go:71] "Leading: took the Lease"
E1128 10:41:54.000000   17993 reflector.go:507] "Caches populated" type="*v1.Secret"
I1128 10:42:08.391399   17993 reflector.go:507] "Caches populated" type="example.com/v1, Resource=widgets" reflector="x"
`
	near := time.Date(2026, 11, 28, 10, 37, 0, 0, time.Local)
	got := relistsIn(out, near)
	want := []relist{
		{at: time.Date(2026, 11, 28, 10, 41, 53, 184695000, time.Local), what: "*v1.ConfigMap"},
		{at: time.Date(2026, 11, 28, 10, 42, 8, 391399000, time.Local), what: "example.com/v1, Resource=widgets"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].at.Equal(want[i].at) || got[i].what != want[i].what {
			t.Errorf("list %d: got %v %q, want %v %q", i, got[i].at, got[i].what, want[i].at, want[i].what)
		}
	}
}

// TestBlindSpansOf: a type is blind from a fault's start until the
// running processes' first lists of it after the healing, at least
// relistGrace; a list after the next fault began, or by a process
// started after the healing, does not extend it.
func TestBlindSpansOf(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cm, wd := "*v1.ConfigMap", "example.com/v1, Resource=widgets"
	types := []robustType{{typ: "cms", reflectorType: cm}, {typ: "widgets", reflectorType: wd}}
	faults := []faultSpan{
		{name: "restart-apiserver", start: at(0), end: at(7)},
		{name: "kill-leader", start: at(10), end: at(12)},
		{name: "compaction", start: at(20), end: at(40)},
	}
	procs := []procLists{
		// Running throughout: its Widgets relisted 15 s in, its
		// ConfigMaps only after the compaction.
		{started: at(-5), relists: []relist{{at(15), wd}, {at(45), cm}}},
		// Started after the restart healed: its first lists are its own.
		{started: at(9), relists: []relist{{at(17), cm}, {at(17), wd}}},
	}
	got := blindSpansOf(faults, types, procs)
	want := []blindSpan{
		{typ: "cms", start: at(0), end: at(12)},      // grace: its list at 45 is the compaction's
		{typ: "widgets", start: at(0), end: at(15)},  // its relist
		{typ: "cms", start: at(20), end: at(45)},     // its relist
		{typ: "widgets", start: at(20), end: at(45)}, // grace
	}
	if len(got) != len(want) {
		t.Fatalf("got %d spans %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i].typ != want[i].typ || !got[i].start.Equal(want[i].start) || !got[i].end.Equal(want[i].end) {
			t.Errorf("span %d: got %s %v..%v, want %s %v..%v", i, got[i].typ, got[i].start.Sub(t0), got[i].end.Sub(t0), want[i].typ, want[i].start.Sub(t0), want[i].end.Sub(t0))
		}
	}
}

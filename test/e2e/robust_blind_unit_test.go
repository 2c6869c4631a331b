package e2e

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
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

// TestRelistsFromIn reads the relists a bridge logged starting, with the
// resource and the resourceVersion, in either order of the keys.
func TestRelistsFromIn(t *testing.T) {
	out := `I1128 15:49:44.300000   17993 relists.go:26] "Relisting: the watch ended; the list shows each object's newest version, not those made since this resourceVersion" resource="configmaps.v1" fromResourceVersion="5200"
I1128 15:49:44.400000   17993 relists.go:26] "Relisting: x" fromResourceVersion="5300" resource="widgets.v1.example.com"
I1128 15:49:44.500000   17993 relists.go:26] "Relisting: x" resource="configmaps.v1"
I1128 15:49:44.600000   17993 reflector.go:507] "Caches populated" type="*v1.ConfigMap" fromResourceVersion="1"
`
	got := relistsFromIn(out, time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local))
	want := []relistFrom{
		{at: time.Date(2026, 11, 28, 15, 49, 44, 300000000, time.Local), resource: "configmaps.v1", rv: "5200"},
		{at: time.Date(2026, 11, 28, 15, 49, 44, 400000000, time.Local), resource: "widgets.v1.example.com", rv: "5300"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].at.Equal(want[i].at) || got[i].resource != want[i].resource || got[i].rv != want[i].rv {
			t.Errorf("relist %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestBlindSpansOf: a type is blind from a fault's start until the
// running processes' first lists of it after the healing, at least
// relistGrace; a list after the next fault began, or by a process
// started after the healing, does not extend it. A relist from a
// resourceVersion older than the fault starts the span earlier, at the
// first version after it; one from later leaves the fault's start.
func TestBlindSpansOf(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.Local)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cm, wd := "*v1.ConfigMap", "example.com/v1, Resource=widgets"
	types := []robustType{
		{typ: "cms", reflectorType: cm, gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{typ: "widgets", reflectorType: wd, gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}},
	}
	faults := []faultSpan{
		{name: "restart-apiserver", start: at(0), end: at(7)},
		{name: "kill-leader", start: at(10), end: at(12)},
		{name: "compaction", start: at(20), end: at(40)},
	}
	procs := []procLists{
		// Running throughout: its Widgets relisted 15 s in, its
		// ConfigMaps only after the compaction. Its ConfigMaps' watch
		// was 3 s behind at the restart (the first version after rv 100
		// was made at -3 s); at the compaction it had seen everything
		// before the fault (the first version after rv 300 came at 22 s).
		{started: at(-5), relists: []relist{{at(15), wd}, {at(45), cm}},
			from: []relistFrom{{at(8), "configmaps.v1", "100"}, {at(8), "widgets.v1.example.com", "200"}, {at(44), "configmaps.v1", "300"}}},
		// Started after the restart healed: its first lists are its own.
		{started: at(9), relists: []relist{{at(17), cm}, {at(17), wd}}},
	}
	made := map[string]time.Time{"cms 100": at(-3), "widgets 200": at(1), "cms 300": at(22)}
	after := func(typ, rv string) (time.Time, bool) {
		m, ok := made[typ+" "+rv]
		return m, ok
	}
	got := blindSpansOf(faults, types, procs, after)
	want := []blindSpan{
		{typ: "cms", start: at(-3), end: at(12)},     // from its watch's position; grace: its list at 45 is the compaction's
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

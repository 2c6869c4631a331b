package consume

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The term rule, in stream order: an event of an older term than one seen
// before it is ignored.
func TestApplierTermRule(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "old", "u0", "5")) // a bridge older than terms: term 0
	t1 := f.term("a")
	f.added(cm("ns", "a", "u1", "10"))
	t2 := f.term("b")
	f.inTerm(t1, func() {
		f.added(cm("ns", "late", "u2", "11"))                           // the deposed leader, after t2 began
		f.updated(cm("ns", "a", "u1", "12"), cm("ns", "a", "u1", "10")) // same
	})
	f.inTerm(0, func() { f.added(cm("ns", "ancient", "u3", "13")) })
	f.added(cm("ns", "b", "u4", "14"))
	var fenced []string
	a, vs, _ := newTestApplier(t, WithHooks(Hooks{OnFenced: func(ev *Event) { fenced = append(fenced, ev.Name) }}))
	applyAll(t, a, f)
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@10", "ns/b@14", "ns/old@5"}) {
		t.Errorf("held %v", got)
	}
	if !slices.Equal(fenced, []string{"late", "a", "ancient"}) {
		t.Errorf("fenced %v", fenced)
	}
	st := a.Stats()
	if st.Fenced != 3 || st.Term != t2 || len(*vs) != 0 {
		t.Errorf("fenced %d, term %d (want %d), violations %v", st.Fenced, st.Term, t2, *vs)
	}
}

// The rule without the markers: when the stream no longer holds the
// marker of a term (discarded with the oldest messages), an event of an
// older term after an event of that term is still fenced, by the term
// the events carry.
func TestApplierTermRuleWithoutMarkers(t *testing.T) {
	f := newFab(t, &memStore{})
	f.added(cm("ns", "p", "u0", "5"))
	f.added(cm("ns", "q", "u1", "6"))
	f.inTerm(2, func() { f.added(cm("ns", "new", "u2", "7")) })
	f.inTerm(1, func() { f.added(cm("ns", "deposed", "u3", "8")) })
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/new@7", "ns/p@5", "ns/q@6"}) {
		t.Errorf("held %v, want the deposed term's event fenced", got)
	}
	if st := a.Stats(); st.Fenced != 1 || st.Term != 2 || len(*vs) != 0 {
		t.Errorf("fenced %d, term %d, violations %v; want 1 fenced, term 2, none", st.Fenced, st.Term, *vs)
	}
}

// The rule with the markers known in advance and only some messages read,
// as a last-per-subject reader sees them: a message counts as fenced when
// a marker lies between its term and its own sequence.
func TestApplierTermRuleWithKnownMarkers(t *testing.T) {
	f := newFab(t, &memStore{})
	t1 := f.term("a")
	f.added(cm("ns", "x", "u1", "10"))
	f.term("b")
	f.added(cm("ns", "y", "u2", "11"))
	f.inTerm(t1, func() { f.added(cm("ns", "z", "u3", "12")) })
	a, _, _ := newTestApplier(t)
	var markers []uint64
	for i, m := range f.msgs {
		if m.Header.Get("ce-type") == "io.kubebridge.term" {
			markers = append(markers, f.seqs[i])
		}
	}
	a.AddTerms(markers...)
	// Only the objects' last messages, no markers among them.
	for i, m := range f.msgs {
		if m.Header.Get("ce-type") != "io.kubebridge.term" {
			if err := a.ApplyMsg(f.seqs[i], m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/x@10", "ns/y@11"}) {
		t.Errorf("held %v, want x (written before term b began) and y, not z", got)
	}
}

// An event whose term no marker backs is foreign: reported, not applied,
// and its term does not count (a forged high term would otherwise fence
// every real event after it). Term 0, and a term older than every marker
// held, are real.
func TestApplierForeignTerms(t *testing.T) {
	f := newFab(t, &memStore{})
	f.term("a")
	f.added(cm("ns", "a", "u1", "10"))
	t2 := f.term("b")
	f.inTerm(99999999, func() { f.added(cm("ns", "forged-high", "u2", "11")) })
	f.inTerm(t2-1, func() { f.added(cm("ns", "forged-between", "u3", "12")) }) // t2-1 holds "a", no marker
	f.added(cm("ns", "b", "u4", "13"))
	a, vs, _ := newTestApplier(t)
	applyAll(t, a, f)
	if got := held(a.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@10", "ns/b@13"}) {
		t.Errorf("held %v: foreign events applied, or real ones fenced by them", got)
	}
	var foreign []string
	for _, v := range *vs {
		if v.Kind == Foreign {
			foreign = append(foreign, v.Subject[strings.LastIndex(v.Subject, ".")+1:])
		}
	}
	if len(foreign) != 2 || a.Stats().Term != t2 || a.Stats().Fenced != 0 {
		t.Errorf("foreign %q, term %d, fenced %d; want both forged events foreign, term %d, none fenced", foreign, a.Stats().Term, a.Stats().Fenced, t2)
	}
}

// termIn stores a term marker that says it was written under contract
// version v ("" for none: a bridge from before versions).
func (f *fab) termIn(holder, v string) uint64 {
	f.t.Helper()
	m, err := f.enc.TermMarker(contract.TermData{Holder: holder}, f.now())
	if err != nil {
		f.t.Fatal(err)
	}
	if v == "" {
		m.Header.Del("ce-" + contract.ExtContractVersion)
	} else {
		m.Header.Set("ce-"+contract.ExtContractVersion, v)
	}
	seq := f.put(m)
	f.enc.Term = seq
	return seq
}

// A reader takes a stream of its own major contract version, an older
// marker without a version, and a newer minor; it refuses a newer major,
// with ErrUnsupportedContract, whether it meets the marker while
// bootstrapping (State), while following (State, after sync) or while
// iterating (Events).
func TestContractVersions(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{{"", false}, {contract.ContractVersion, false}, {"1.9", false}, {"2.0", true}, {"x", true}} {
		t.Run("version "+tc.version, func(t *testing.T) {
			_, js, s := startJetStream(t)
			f := newFab(t, s)
			f.termIn("a", tc.version)
			f.added(cm("ns", "a", "u1", "10"))
			c := testClient(t, js)

			st, ctx, done := startStateOf(t, c)
			if tc.refused {
				if err := <-done; !errors.Is(err, ErrUnsupportedContract) {
					t.Fatalf("State.Run: %v, want ErrUnsupportedContract", err)
				}
			} else if err := st.WaitForSync(ctx); err != nil {
				t.Fatalf("WaitForSync: %v", err)
			}
			var iterErr error
			for _, err := range c.Events(ctx, []Filter{{Resource: "configmaps"}}, UntilCaughtUp()) {
				if err != nil {
					iterErr = err
				}
			}
			if got := errors.Is(iterErr, ErrUnsupportedContract); got != tc.refused {
				t.Errorf("Events: %v; refused %v, want %v", iterErr, got, tc.refused)
			}
		})
	}
}

// A term marker of an unknown major version read after sync (a bridge of
// a newer release took over) stops the State.
func TestContractVersionAfterSync(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	f.termIn("a", contract.ContractVersion)
	f.added(cm("ns", "a", "u1", "10"))
	st, ctx, done := startStateOf(t, testClient(t, js))
	if err := st.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	f.termIn("b", "2.0")
	if err := <-done; !errors.Is(err, ErrUnsupportedContract) {
		t.Fatalf("State.Run: %v, want ErrUnsupportedContract", err)
	}
}

// startStateOf runs a State of configmaps, as far as it gets within 30s;
// done receives what Run returned.
func startStateOf(t *testing.T, c *Client) (*State, context.Context, <-chan error) {
	t.Helper()
	st, err := c.NewState([]Filter{{Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	return st, ctx, done
}

package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// history stores a stream that needs every rule to read right:
//
//   - c was deleted while no bridge published, and its delete was never
//     written: only the sweep of s2 removes it;
//   - d exists but s2 could not publish its item: s2's end lists it as
//     unpublished, and it must stay;
//   - term b began before s2; the deposed leader of term a still stored
//     an add of "late" (an object term b never saw) and an update of f
//     (term b wrote f later): both must be ignored.
func history(f *fab) {
	t1 := f.term("a")
	objs := []struct{ name, uid, rv string }{{"a", "u1", "10"}, {"b", "u2", "11"}, {"c", "u3", "12"}, {"d", "u4", "13"}, {"f", "u7", "15"}}
	for _, o := range objs {
		f.added(cm("ns", o.name, o.uid, o.rv))
	}
	f.begin("s1")
	for _, o := range objs {
		f.item("s1", cm("ns", o.name, o.uid, o.rv))
	}
	f.end("s1", len(objs))
	f.updated(cm("ns", "a", "u1", "14"), cm("ns", "a", "u1", "10"))
	f.term("b")
	f.begin("s2")
	f.item("s2", cm("ns", "a", "u1", "14"))
	f.inTerm(t1, func() {
		f.added(cm("ns", "late", "u5", "20"))
		f.updated(cm("ns", "f", "u7", "21"), cm("ns", "f", "u7", "15"))
	})
	f.item("s2", cm("ns", "b", "u2", "11"))
	f.item("s2", cm("ns", "f", "u7", "21"))
	f.end("s2", 3, "ns/d")
	f.added(cm("ns", "e", "u6", "22"))
}

var historyState = []string{"ns/a@14", "ns/b@11", "ns/d@13", "ns/e@22", "ns/f@21"}

// runState starts st and waits until it has synced.
func runState(t *testing.T, st *State) (stop func()) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := st.WaitForSync(wctx); err != nil {
		cancel()
		t.Fatalf("WaitForSync: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitSeq waits until st has handled stream sequence seq.
func waitSeq(t *testing.T, st *State, seq uint64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return st.Stats().LastSeq >= seq, nil
	})
	if err != nil {
		t.Fatalf("the state handled up to seq %d within 30s, not %d", st.Stats().LastSeq, seq)
	}
}

func TestStateBootstrapsOnJetStream(t *testing.T) {
	for _, mode := range []BootstrapMode{LastPerSubject, FullReplay} {
		t.Run(mode.String(), func(t *testing.T) {
			_, js, s := startJetStream(t)
			f := newFab(t, s)
			history(f)
			var vs []Violation
			var fenced []string
			st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(mode),
				WithHooks(Hooks{OnViolation: func(v Violation) { vs = append(vs, v) }, OnFenced: func(ev *Event) { fenced = append(fenced, describe(ev.Object)) }}))
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			if err := st.AddEventHandler("configmaps", rec); err != nil {
				t.Fatal(err)
			}
			runState(t, st)
			if got := held(st.Indexer("configmaps")); !slices.Equal(got, historyState) {
				t.Errorf("after the bootstrap: %v, want %v", got, historyState)
			}
			if len(rec.calls) != len(historyState) {
				t.Errorf("initial list: %q", rec.calls)
			}
			if !slices.Contains(fenced, "ns/late@20") {
				t.Errorf("fenced %v: the deposed leader's add of late is not among them", fenced)
			}
			if st.Stats().Breaches() != 0 {
				t.Errorf("violations: %v", vs)
			}
			// What each mode reads: the last message of each object's
			// subject (a…f, e; late is fenced), or the replay from the
			// begin of s2 (items a, b, f; e) and the last message of d,
			// which s2 did not publish.
			if applied := map[BootstrapMode]uint64{LastPerSubject: 6, FullReplay: 5}[mode]; st.Stats().Applied != applied {
				t.Errorf("applied %d events while bootstrapping, want %d", st.Stats().Applied, applied)
			}

			// Live: the state follows, and handlers see each change.
			rec.calls = nil
			f.updated(cm("ns", "e", "u6", "23"), cm("ns", "e", "u6", "22"))
			f.deleted(cm("ns", "b", "u2", "24"))
			waitSeq(t, st, f.seqs[len(f.seqs)-1])
			want := []string{"update ns/e@22 -> ns/e@23", "delete ns/b@24"}
			if !slices.Equal(rec.calls, want) {
				t.Errorf("live handler calls %q, want %q", rec.calls, want)
			}
		})
	}
}

// TestStateStalledLastPerSubjectReplaysInstead pauses the last-per-subject
// bootstrap's consumer, which to the State is a consumer that delivers
// nothing although the stream holds messages: the State must replace it
// and, since a new last-per-subject consumer may stall the same way, sync
// by a full replay instead, to the same state.
func TestStateStalledLastPerSubjectReplaysInstead(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	history(f)
	st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(LastPerSubject))
	if err != nil {
		t.Fatal(err)
	}
	var lastPerSubject atomic.Int32
	st.stall = time.Second
	st.consumerHook = func(cfg *jetstream.ConsumerConfig) {
		if cfg.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy {
			lastPerSubject.Add(1)
			until := time.Now().Add(time.Hour)
			cfg.PauseUntil = &until
		}
	}
	runState(t, st)
	if got := held(st.Indexer("configmaps")); !slices.Equal(got, historyState) {
		t.Errorf("after the bootstrap: %v, want %v", got, historyState)
	}
	// 5 events applied is the full replay's count (TestStateBootstrapsOnJetStream).
	if n := lastPerSubject.Load(); n != 1 || st.Stats().Applied != 5 {
		t.Errorf("%d last-per-subject consumers, then %d events applied; want 1, then a full replay's 5", n, st.Stats().Applied)
	}
}

// An end marker whose begin was compacted away is skipped and reported,
// not fatal, even with StopOnViolation; the replay goes on.
func TestFullReplayEndWithoutKeptBegin(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	f.term("a")
	f.added(cm("ns", "a", "u1", "10"))
	begin := f.begin("s1")
	f.item("s1", cm("ns", "a", "u1", "10"))
	f.end("s1", 1)
	f.added(cm("ns", "b", "u2", "11"))
	ctx := context.Background()
	stream, err := js.Stream(ctx, s.stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, begin); err != nil {
		t.Fatal(err)
	}
	var vs []Violation
	st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(FullReplay), StopOnViolation(),
		WithHooks(Hooks{OnViolation: func(v Violation) { vs = append(vs, v) }}))
	if err != nil {
		t.Fatal(err)
	}
	runState(t, st)
	if got := held(st.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@10", "ns/b@11"}) {
		t.Errorf("held %v", got)
	}
	if len(vs) != 1 || vs[0].Kind != EndSkipped {
		t.Errorf("violations %v, want one %s", vs, EndSkipped)
	}
}

// A stream that does not exist ends Run, and WaitForSync says so.
func TestStateWithoutStream(t *testing.T) {
	_, js, _ := startJetStream(t)
	c, err := New(js, WithStream("MISSING"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.NewState([]Filter{{Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	runErr := st.Run(ctx)
	if !errors.Is(runErr, jetstream.ErrStreamNotFound) {
		t.Errorf("Run: %v", runErr)
	}
	if err := st.WaitForSync(ctx); !errors.Is(err, ErrStopped) || !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("WaitForSync: %v", err)
	}
	for _, twice := range [][]Filter{{{Resource: "configmaps"}, {Resource: "configmaps.v1"}}, {{Resource: "configmaps"}, {Resource: "configmaps", Namespace: "x"}}} {
		if _, err := c.NewState(twice); !errors.Is(err, ErrBadFilter) {
			t.Errorf("%v: %v", twice, err)
		}
	}
}

// A consumer the server loses (deleted here; a restart of a server with
// memory storage does the same) is created again from the next sequence:
// the state misses nothing and applies nothing twice.
func TestStateSurvivesConsumerLoss(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	history(f)
	st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	runState(t, st)
	ctx := context.Background()
	stream, err := js.Stream(ctx, s.stream)
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(ctx)
	n := 0
	for name := range names.Name() {
		if err := stream.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d consumers, want the state's one", n)
	}
	f.updated(cm("ns", "e", "u6", "23"), cm("ns", "e", "u6", "22"))
	f.added(cm("ns", "g", "u8", "24"))
	waitSeq(t, st, f.seqs[len(f.seqs)-1])
	want := []string{"ns/a@14", "ns/b@11", "ns/d@13", "ns/e@23", "ns/f@21", "ns/g@24"}
	if got := held(st.Indexer("configmaps")); !slices.Equal(got, want) {
		t.Errorf("held %v, want %v", got, want)
	}
	if st.Stats().Breaches() != 0 {
		t.Errorf("violations: %v", st.Stats().Violations)
	}
}

// initialCount counts the objects a handler gets in its initial list.
type initialCount struct{ n atomic.Int64 }

func (c *initialCount) OnAdd(_ any, initial bool) {
	if initial {
		c.n.Add(1)
	}
}
func (c *initialCount) OnUpdate(_, _ any) {}
func (c *initialCount) OnDelete(any)      {}

// TestLastPerSubjectListsEveryObjectUnderChurn bootstraps from the last
// message per subject again and again while objects, never deleted, are
// updated as fast as the server takes it: every initial list holds every
// object. A reader that decides it has caught up from where the stream
// stood before its consumer existed lists without the objects changed in
// between: the consumer delivers only their newer message, and that comes
// after the point the reader took for the end.
func TestLastPerSubjectListsEveryObjectUnderChurn(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	const objects = 40
	objs := make([]*corev1.ConfigMap, objects)
	for i := range objs {
		objs[i] = cm("ns", fmt.Sprintf("o%02d", i), fmt.Sprintf("u%02d", i), "10")
		f.added(objs[i])
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			old := objs[i%objects]
			objs[i%objects] = cm("ns", old.Name, string(old.UID), fmt.Sprint(11+i))
			f.updated(objs[i%objects], old)
		}
	}()
	defer func() { close(stop); <-done }()
	for attempt := range 30 {
		st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(LastPerSubject))
		if err != nil {
			t.Fatal(err)
		}
		var initial initialCount
		if err := st.AddEventHandler("configmaps", &initial); err != nil {
			t.Fatal(err)
		}
		stopState := runState(t, st)
		stopState()
		if got := initial.n.Load(); got != objects {
			t.Fatalf("bootstrap %d: the initial list holds %d of the %d objects (synced at %+v)", attempt, got, objects, st.Stats())
		}
	}
}

// A full replay whose newest end marker has a term header that does not
// parse starts from the newest end marker that has one, not from the
// first message of the stream. The bad marker is still read, and reported.
func TestFullReplayPastABadEndMarker(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	f.term("a")
	for i := range 20 {
		f.added(cm("ns", fmt.Sprintf("gone-%02d", i), fmt.Sprintf("g%d", i), fmt.Sprint(10+i)))
	}
	f.begin("s1")
	f.item("s1", cm("ns", "a", "u1", "40"))
	f.end("s1", 1)
	f.begin("s2")
	f.item("s2", cm("ns", "a", "u1", "40"))
	e, err := f.enc.EncodeWithin(informers.Change{Verb: informers.SnapshotEnd, Resource: cmResource, SnapshotID: "s2", SnapshotCount: 1, ObservedAt: f.now()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.Msg.Header.Set(contract.TermHeader, "not-a-term")
	f.put(e.Msg)
	var vs []Violation
	st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}}, Bootstrap(FullReplay),
		WithHooks(Hooks{OnViolation: func(v Violation) { vs = append(vs, v) }}))
	if err != nil {
		t.Fatal(err)
	}
	runState(t, st)
	if got := held(st.Indexer("configmaps")); !slices.Equal(got, []string{"ns/a@40"}) {
		t.Errorf("held %v, want [ns/a@40]", got)
	}
	// From s1's begin: the two items of ns/a; from the first message, the
	// twenty objects s1 swept too.
	if got := st.Stats().Applied; got != 2 {
		t.Errorf("%d events applied, want 2: the replay did not start at s1's begin", got)
	}
	if got := kinds(vs); !slices.Equal(got, []ViolationKind{Undecodable}) {
		t.Errorf("violations %v, want the bad end marker reported as undecodable", got)
	}
}

// TestStateDefaultBootstrapSurvivesARolledUpMessage deletes an object (a
// delete rolls up the object's earlier messages) after the default
// bootstrap's consumer exists, but before it delivers anything. A
// last-per-subject consumer's server-side list would still name the
// removed message, and nats-server stops at it until the next pull or
// message (see LastPerSubject): the default bootstrap must read past it
// with its first consumer, to the state without the object.
func TestStateDefaultBootstrapSurvivesARolledUpMessage(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	history(f)
	st, err := testClient(t, js).NewState([]Filter{{Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	var consumers atomic.Int32
	deleted := make(chan struct{})
	st.stall = 3 * time.Second
	st.consumerHook = func(cfg *jetstream.ConsumerConfig) {
		if consumers.Add(1) > 1 {
			return
		}
		until := time.Now().Add(1500 * time.Millisecond)
		cfg.PauseUntil = &until
		go func() {
			defer close(deleted)
			ctx := context.Background()
			stream, err := js.Stream(ctx, s.stream)
			if err != nil {
				t.Error(err)
				return
			}
			// Once the consumer exists, and before its pause ends.
			for stream.CachedInfo().State.Consumers == 0 && time.Now().Before(until) {
				time.Sleep(10 * time.Millisecond)
				if _, err := stream.Info(ctx); err != nil {
					t.Error(err)
					return
				}
			}
			f.deleted(cm("ns", "b", "u2", "30"))
		}()
	}
	runState(t, st)
	<-deleted
	want := slices.DeleteFunc(slices.Clone(historyState), func(s string) bool { return strings.HasPrefix(s, "ns/b@") })
	if got := held(st.Indexer("configmaps")); !slices.Equal(got, want) {
		t.Errorf("after the bootstrap: %v, want %v", got, want)
	}
	if n := consumers.Load(); n != 1 {
		t.Errorf("%d bootstrap consumers, want 1 (one that delivered nothing was replaced)", n)
	}
}

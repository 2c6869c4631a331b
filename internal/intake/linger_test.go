package intake

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// lingerClock hands the intake's linger waits to the test: each call of
// after is reported on asked, and ends when the test sends on fire.
type lingerClock struct {
	asked chan time.Duration
	fire  chan time.Time
}

func newLingerClock(in *Intake) *lingerClock {
	c := &lingerClock{asked: make(chan time.Duration, 16), fire: make(chan time.Time, 16)}
	in.lingering.after = func(d time.Duration) <-chan time.Time {
		c.asked <- d
		return c.fire
	}
	return c
}

// lingered waits until the intake lingers, and returns how long for.
func (c *lingerClock) lingered(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.asked:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("next did not linger after its wake-up")
		return 0
	}
}

type nextResult struct {
	w  Work
	ok bool
}

func nextAsync(ctx context.Context, in *Intake, linger time.Duration) <-chan nextResult {
	out := make(chan nextResult, 1)
	go func() {
		w, ok := in.Next(ctx, linger)
		out <- nextResult{w, ok}
	}()
	return out
}

// comeOften makes the intake see changes come often: two of them, no time
// apart by its clock, both taken and settled.
func comeOften(t *testing.T, in *Intake) {
	in.Add(live(informers.Added, intakeCM("early-1", "ue1", "1"), nil))
	in.Add(live(informers.Added, intakeCM("early-2", "ue2", "1"), nil))
	drain(t, in)
}

// Woken while changes come often, the run loop waits out the linger before
// it takes anything, so the changes that arrive meanwhile go on together;
// with work waiting it takes at once.
func TestIntakeLingersWhileChangesComeOften(t *testing.T) {
	in, _ := newTestIntake()
	clock := newLingerClock(in)
	comeOften(t, in)
	// A wake-up with nothing to take yet: next has waited (no time at
	// all, by the test's clock), whenever its goroutine gets to run.
	in.signal()
	got := nextAsync(context.Background(), in, 5*time.Millisecond)
	if d := clock.lingered(t); d != 5*time.Millisecond {
		t.Fatalf("lingered %v, want 5ms", d)
	}
	in.Add(live(informers.Added, intakeCM("a", "ua", "1"), nil))
	in.Add(live(informers.Added, intakeCM("b", "ub", "1"), nil))
	select {
	case r := <-got:
		t.Fatalf("next handed on %s before the linger ended", r.w.Ref.Key)
	default:
	}
	clock.fire <- time.Time{}

	var first nextResult
	select {
	case first = <-got:
	case d := <-clock.asked:
		t.Fatalf("lingered %v again although a change waited", d)
	}
	if !first.ok || first.w.Ref.Key != "ns/a" {
		t.Fatalf("first after the linger: %+v, want ns/a", first)
	}
	// b came during the linger: it is taken without another one.
	second := nextAsync(context.Background(), in, 5*time.Millisecond)
	select {
	case r := <-second:
		if !r.ok || r.w.Ref.Key != "ns/b" {
			t.Fatalf("second: %+v, want ns/b", r)
		}
	case d := <-clock.asked:
		t.Fatalf("lingered %v again although a change waited", d)
	}
}

// A linger ends with ctx, handing nothing on.
func TestIntakeLingerEndsWithContext(t *testing.T) {
	in, _ := newTestIntake()
	clock := newLingerClock(in)
	comeOften(t, in)
	ctx, cancel := context.WithCancel(context.Background())
	in.signal()
	got := nextAsync(ctx, in, time.Hour)
	clock.lingered(t)
	in.Add(live(informers.Added, intakeCM("a", "ua", "1"), nil))
	cancel()
	select {
	case r := <-got:
		if r.ok {
			t.Fatalf("next handed on %s after ctx ended during the linger", r.w.Ref.Key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the linger did not end with ctx")
	}
}

// Without a linger nothing waits for a timer.
func TestIntakeWithoutLinger(t *testing.T) {
	in, _ := newTestIntake()
	in.lingering.after = func(d time.Duration) <-chan time.Time {
		t.Errorf("lingered %v with no linger set", d)
		return time.After(0)
	}
	in.signal()
	got := nextAsync(context.Background(), in, 0)
	in.Add(live(informers.Added, intakeCM("a", "ua", "1"), nil))
	if r := <-got; !r.ok || r.w.Ref.Key != "ns/a" {
		t.Fatalf("got %+v, want ns/a", r)
	}
}

// A change that would merge with one waiting during a linger ends the
// linger and waits behind it instead: a linger does not merge changes that
// publishing, not being behind, would have sent one by one.
func TestIntakeLingerKeepsChangesApart(t *testing.T) {
	in, counts := newTestIntake()
	clock := newLingerClock(in)
	comeOften(t, in)
	in.signal()
	got := nextAsync(context.Background(), in, time.Hour)
	clock.lingered(t)
	in.Add(live(informers.Added, intakeCM("a", "ua", "1"), nil))
	in.Add(live(informers.Updated, intakeCM("a", "ua", "2"), intakeCM("a", "ua", "1")))

	var first nextResult
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second change of a did not end the linger")
	}
	if !first.ok || first.w.Change.Verb != informers.Added || resourceVersionOf(first.w.Change.Object) != "1" || first.w.Change.Coalesced != 0 {
		t.Fatalf("first: %s rv %s coalesced %d, want the add of rv 1 alone", first.w.Change.Verb, resourceVersionOf(first.w.Change.Object), first.w.Change.Coalesced)
	}
	in.Done(first.w)
	second, ok := in.Next(context.Background(), 0)
	if !ok || second.Change.Verb != informers.Updated || resourceVersionOf(second.Change.Object) != "2" {
		t.Fatalf("second: %s rv %s, want the update to rv 2", second.Change.Verb, resourceVersionOf(second.Change.Object))
	}
	if counts[configMaps] != 0 {
		t.Errorf("%d changes coalesced during a linger", counts[configMaps])
	}

	// Without a linger the same two changes, waiting, merge as always.
	in.Done(second)
	in.Add(live(informers.Added, intakeCM("b", "ub", "1"), nil))
	in.Add(live(informers.Updated, intakeCM("b", "ub", "2"), intakeCM("b", "ub", "1")))
	merged, _ := in.Next(context.Background(), 0)
	if merged.Change.Verb != informers.Added || resourceVersionOf(merged.Change.Object) != "2" || counts[configMaps] != 1 {
		t.Errorf("without a linger: %s rv %s, %d coalesced; want one add of rv 2, 1 coalesced", merged.Change.Verb, resourceVersionOf(merged.Change.Object), counts[configMaps])
	}
}

// Changes of a type held back merge during a linger as at any time: they
// cannot be taken, so keeping them apart would grow the object's queue by
// one per linger for as long as the hold lasts.
func TestIntakeLingerLeavesHeldChangesMerging(t *testing.T) {
	in, counts := newTestIntake()
	clock := newLingerClock(in)
	comeOften(t, in)
	in.Hold(configMaps)
	in.signal()
	got := nextAsync(context.Background(), in, time.Hour)
	clock.lingered(t)
	for rv := 1; rv <= 3; rv++ {
		in.Add(live(informers.Updated, intakeCM("a", "ua", fmt.Sprint(rv+1)), intakeCM("a", "ua", fmt.Sprint(rv))))
	}
	in.mu.Lock()
	queued := len(in.objects[Ref{Resource: configMaps, Key: "ns/a"}].queue)
	in.mu.Unlock()
	if queued != 1 || counts[configMaps] != 2 {
		t.Errorf("a held object has %d changes waiting, %d coalesced; want 1 and 2", queued, counts[configMaps])
	}
	// Released before the linger ends, so that the loop finds the object
	// ready when it does. Fired first, the loop could find nothing to
	// take, see the wake-ups the three changes left, and linger again:
	// for an hour, on a clock that no longer fires.
	in.Release(configMaps, nil)
	clock.fire <- time.Time{}
	select {
	case r := <-got:
		if !r.ok || r.w.Change.Coalesced != 3 {
			t.Errorf("after the release: %+v, want one update standing for 3 changes", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("next took nothing after the release and the linger's end")
	}
}

// The run loop lingers only while changes come at least lingerCompany
// times per linger, judged from the gaps between the latest ones: changes
// that come less often, or the first after a quiet spell, would gather
// little company and are taken at once.
func TestIntakeLingersOnlyWhileChangesComeOften(t *testing.T) {
	const linger = 20 * time.Millisecond
	for _, tc := range []struct {
		name string
		gaps []time.Duration // between the changes before the wake-up
		gap  time.Duration   // before the change that follows it
		want bool
	}{
		{"a change every millisecond", repeat(time.Millisecond, 8), time.Millisecond, true},
		{"a change every 4ms", repeat(4*time.Millisecond, 8), 4 * time.Millisecond, true},
		{"a change every 6ms", repeat(6*time.Millisecond, 8), 6 * time.Millisecond, false},
		{"a change every 10ms", repeat(10*time.Millisecond, 8), 10 * time.Millisecond, false},
		{"pairs 20ms apart", pairs(20*time.Millisecond, 8), 20 * time.Millisecond, false},
		{"the first after a quiet hour", append(repeat(time.Millisecond, 8), time.Hour), time.Millisecond, false},
		{"the third change ever", []time.Duration{time.Millisecond}, time.Millisecond, true},
		{"the first change ever", nil, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := newTestIntake()
			now := time.Unix(0, 0)
			in.now = func() time.Time { return now }
			var lingers atomic.Int32
			in.lingering.after = func(time.Duration) <-chan time.Time {
				lingers.Add(1)
				return time.After(0)
			}
			if tc.gap >= 0 {
				in.Add(live(informers.Added, intakeCM("c0", "u0", "1"), nil))
			}
			for i, gap := range tc.gaps {
				now = now.Add(gap)
				in.Add(live(informers.Added, intakeCM(fmt.Sprint("c", i+1), fmt.Sprint("u", i+1), "1"), nil))
			}
			drain(t, in)

			// A wake-up with nothing to take: the run loop decides there
			// whether to linger. The change comes once it has taken the
			// wake-up, so either way it is what next hands on.
			in.signal()
			got := nextAsync(context.Background(), in, linger)
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return len(in.wake) == 0, nil
			}); err != nil {
				t.Fatal("next did not take the wake-up")
			}
			now = now.Add(max(tc.gap, 0))
			in.Add(live(informers.Added, intakeCM("a", "ua", "1"), nil))
			if r := <-got; !r.ok || r.w.Ref.Key != "ns/a" {
				t.Fatalf("got %+v, want ns/a", r)
			}
			if n := lingers.Load(); (n > 0) != tc.want {
				t.Errorf("lingered %d times, want lingering %v", n, tc.want)
			}
		})
	}
}

// pairs is n pairs of changes, the pairs d apart.
func pairs(d time.Duration, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, 0, d)
	}
	return out
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

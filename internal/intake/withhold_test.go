package intake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/fixtures"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A withheld update is not handed on; the object's next change merges into
// it and is published with the withheld change's old object, the version
// last published, so a consumer's base for a patch is what it holds.
func TestWithheldUpdateMergesIntoTheNext(t *testing.T) {
	in, counts := newTestIntake()
	in.Withhold(live(informers.Updated, intakeCM("a", "u1", "2"), intakeCM("a", "u1", "1")))
	in.Withhold(live(informers.Updated, intakeCM("a", "u1", "3"), intakeCM("a", "u1", "2")))
	if got := drain(t, in); len(got) != 0 {
		t.Fatalf("withheld updates were handed on: %s", describeWork(got))
	}
	if p, w := in.PendingObjects(), in.WithheldObjects(); p != 0 || w != 1 {
		t.Errorf("%d pending, %d withheld; want 0 and 1", p, w)
	}
	in.Add(live(informers.Updated, intakeCM("a", "u1", "4"), intakeCM("a", "u1", "3")))
	if got, want := describeWork(drain(t, in)), "[updated ns/a 1→4 c=3] "; got != want {
		t.Errorf("handed on %q; want %q", got, want)
	}
	if counts[configMaps] != 2 {
		t.Errorf("%d changes counted as coalesced; want the 2 withheld ones", counts[configMaps])
	}
	if p, w := in.PendingObjects(), in.WithheldObjects(); p != 0 || w != 0 {
		t.Errorf("after publishing: %d pending, %d withheld; want none", p, w)
	}
}

// What a withheld update meets decides what is published: a delete is
// published as the delete, a snapshot item supersedes it, and a withheld
// update merges into a publishable change that waits without holding it
// back.
func TestWithheldUpdateMeetsOtherChanges(t *testing.T) {
	in, _ := newTestIntake()
	in.Withhold(live(informers.Updated, intakeCM("d", "ud", "2"), intakeCM("d", "ud", "1")))
	in.Add(live(informers.Deleted, intakeCM("d", "ud", "3"), nil))

	in.Withhold(live(informers.Updated, intakeCM("s", "us", "2"), intakeCM("s", "us", "1")))
	in.RequestSnapshot(configMaps, fixtures.MapCache{"ns/s": intakeCM("s", "us", "2")}, informers.Scope{}, "s1")

	in.Add(live(informers.Updated, intakeCM("w", "uw", "2"), intakeCM("w", "uw", "1")))
	in.Withhold(live(informers.Updated, intakeCM("w", "uw", "3"), intakeCM("w", "uw", "2")))

	got := describeWork(drain(t, in))
	for _, want := range []string{"[deleted ns/d 3 c=2]", "[snapshot.item ns/s 2 c=1]", "[updated ns/w 1→3 c=2]"} {
		if !strings.Contains(got, want) {
			t.Errorf("handed on %s; want %s", got, want)
		}
	}
	if w := in.WithheldObjects(); w != 0 {
		t.Errorf("%d objects still withheld; want none", w)
	}
}

// An update withheld while the object's previous change is in flight waits
// withheld once that lands; Drain does not wait for it at shutdown.
func TestWithheldBehindInFlightAndDrain(t *testing.T) {
	in, _ := newTestIntake()
	in.Add(live(informers.Updated, intakeCM("a", "u1", "2"), intakeCM("a", "u1", "1")))
	first := drain1(t, in)
	in.Withhold(live(informers.Updated, intakeCM("a", "u1", "3"), intakeCM("a", "u1", "2")))
	in.Done(first)
	checkInvariants(t, in)
	if p, w := in.PendingObjects(), in.WithheldObjects(); p != 0 || w != 1 {
		t.Fatalf("%d pending, %d withheld; want 0 and 1", p, w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if w, ok := in.Drain(ctx); ok {
		t.Fatalf("Drain handed on %s; want nothing", describeWork([]Work{w}))
	}
	if ctx.Err() != nil {
		t.Fatal("Drain waited for a withheld update until its context ended")
	}
}

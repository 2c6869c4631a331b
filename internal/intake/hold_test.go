package intake

import (
	"strings"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A type's changes wait until its missed-delete scan has run: a name
// deleted and created again while no bridge published is published as the
// old uid's delete, then the new uid's add, even when the add was observed
// before the scan finished.
func TestHeldTypeWaitsForItsMissedDeletes(t *testing.T) {
	in, _ := newTestIntake()
	in.Hold(configMaps)
	in.Add(live(informers.Added, intakeCM("a", "u2", "20"), nil))
	in.Add(live(informers.Updated, intakeCM("b", "ub", "21"), intakeCM("b", "ub", "11")))
	if got := drain(t, in); len(got) != 0 {
		t.Fatalf("a held type handed on %s", describeWork(got))
	}
	missed := []informers.Change{
		{Verb: informers.Deleted, Resource: configMaps, Object: intakeCM("a", "u1", "10"), FinalStateUnknown: true},
		// The live delete of this uid is waiting already: no second one.
		{Verb: informers.Deleted, Resource: configMaps, Object: intakeCM("c", "uc", "12"), FinalStateUnknown: true},
	}
	in.Add(live(informers.Deleted, intakeCM("c", "uc", "13"), nil))
	in.Release(configMaps, missed)
	got := describeWork(drain(t, in))
	del, add := strings.Index(got, "[deleted ns/a 10 c=0]"), strings.Index(got, "[added ns/a 20 c=0]")
	if del < 0 || add < 0 || del > add {
		t.Errorf("handed on %s; want the old uid's delete of ns/a before the new uid's add", got)
	}
	for _, want := range []string{"[updated ns/b 11→21 c=0]", "[deleted ns/c 13 c=0]"} {
		if !strings.Contains(got, want) {
			t.Errorf("handed on %s; want %s", got, want)
		}
	}
	if strings.Contains(got, "ns/c 12") {
		t.Errorf("the missed delete of a uid whose live delete waits was published too: %s", got)
	}
}

// At shutdown, what a still-held type has waiting is forgotten rather than
// published without the deletes that must precede it.
func TestAbandonHeld(t *testing.T) {
	in, _ := newTestIntake()
	in.Hold(configMaps)
	in.Add(live(informers.Added, intakeCM("a", "u2", "20"), nil))
	if n := in.AbandonHeld(); n != 1 {
		t.Errorf("abandoned %d objects, want 1", n)
	}
	if n := in.PendingObjects(); n != 0 {
		t.Errorf("%d objects still pending", n)
	}
}

// Changes held for a missed-delete scan are not work the publisher is
// stuck on: liveness does not count them.
func TestHeldChangesAreNotPublishable(t *testing.T) {
	in, _ := newTestIntake()
	in.Hold(configMaps)
	in.Add(live(informers.Added, intakeCM("a", "u1", "1"), nil))
	if n := in.Publishable(); n != 0 {
		t.Errorf("publishable %d while the type is held, want 0", n)
	}
	in.Release(configMaps, nil)
	if n := in.Publishable(); n != 1 {
		t.Errorf("publishable %d after release, want 1", n)
	}
}

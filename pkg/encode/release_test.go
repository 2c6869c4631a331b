package encode_test

import (
	"bytes"
	"testing"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A message's payload stays as encoded until it is released, however many
// events are encoded meanwhile; once released, its buffer goes to a later
// event.
func TestReleaseHandsTheBufferOn(t *testing.T) {
	enc := newEncoder(0)
	change := func(rv string) informers.Change {
		return informers.Change{Verb: informers.Added, Resource: configMaps, Object: appConfig(rv), ObservedAt: observedAt}
	}
	first, err := enc.Encode(change("1"))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(first.Msg.Data)
	for _, rv := range []string{"2", "3", "4"} {
		other, err := enc.Encode(change(rv))
		if err != nil {
			t.Fatal(err)
		}
		if &other.Msg.Data[0] == &first.Msg.Data[0] {
			t.Fatalf("the event of rv %s was written into the unreleased buffer of rv 1", rv)
		}
		other.Release()
	}
	if !bytes.Equal(first.Msg.Data, want) {
		t.Fatalf("an unreleased payload changed:\n%s\nwas\n%s", first.Msg.Data, want)
	}
	// sync.Pool may drop what it is given (the race detector makes it
	// drop some on purpose), so a few tries.
	for range 20 {
		first.Release()
		next, err := enc.Encode(change("5"))
		if err != nil {
			t.Fatal(err)
		}
		if &next.Msg.Data[0] == &first.Msg.Data[0] {
			return
		}
		first = next
	}
	t.Error("a released buffer was never used again")
}

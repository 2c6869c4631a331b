package encode_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A message's payload and headers stay as encoded until it is released,
// however many events are encoded meanwhile; once released, its buffer and
// its message go to a later event.
func TestReleaseHandsTheBufferOn(t *testing.T) {
	enc := newEncoder(0)
	change := func(rv string) informers.Change {
		return informers.Change{Verb: informers.Added, Resource: configMaps, Object: appConfig(rv), ObservedAt: observedAt}
	}
	first, err := enc.Encode(change("1"))
	if err != nil {
		t.Fatal(err)
	}
	want, wantHeader := bytes.Clone(first.Msg.Data), cloneHeader(first.Msg.Header)
	for _, rv := range []string{"2", "3", "4"} {
		other, err := enc.Encode(change(rv))
		if err != nil {
			t.Fatal(err)
		}
		if &other.Msg.Data[0] == &first.Msg.Data[0] {
			t.Fatalf("the event of rv %s was written into the unreleased buffer of rv 1", rv)
		}
		if other.Msg == first.Msg {
			t.Fatalf("the event of rv %s was written into the unreleased message of rv 1", rv)
		}
		other.Release()
	}
	if !bytes.Equal(first.Msg.Data, want) {
		t.Fatalf("an unreleased payload changed:\n%s\nwas\n%s", first.Msg.Data, want)
	}
	if !reflect.DeepEqual(first.Msg.Header, wantHeader) {
		t.Fatalf("unreleased headers changed:\n%v\nwas\n%v", first.Msg.Header, wantHeader)
	}
	// sync.Pool may drop what it is given (the race detector makes it
	// drop some on purpose), so a few tries.
	reusedBuffer, reusedMsg := false, false
	for range 20 {
		data, msg := &first.Msg.Data[0], first.Msg
		first.Release()
		next, err := enc.Encode(change("5"))
		if err != nil {
			t.Fatal(err)
		}
		reusedBuffer = reusedBuffer || &next.Msg.Data[0] == data
		reusedMsg = reusedMsg || next.Msg == msg
		if reusedBuffer && reusedMsg {
			return
		}
		first = next
	}
	t.Errorf("a released buffer was used again: %v; a released message: %v", reusedBuffer, reusedMsg)
}

// A reused message carries only its new event's headers.
func TestReusedMessageHasOnlyItsOwnHeaders(t *testing.T) {
	enc := newEncoder(0)
	fresh := newEncoder(0)
	deleted := informers.Change{Verb: informers.Deleted, Resource: configMaps, Object: appConfig("7"), ObservedAt: observedAt, FinalStateUnknown: true, Coalesced: 3}
	added := informers.Change{Verb: informers.Added, Resource: configMaps, Object: appConfig("8"), ObservedAt: observedAt}
	for range 20 {
		first, err := enc.Encode(deleted)
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
		got, err := enc.Encode(added)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Encode(added)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Msg.Header, want.Msg.Header) || got.Msg.Subject != want.Msg.Subject {
			t.Fatalf("a reused message:\n%s %v\na new one:\n%s %v", got.Msg.Subject, got.Msg.Header, want.Msg.Subject, want.Msg.Header)
		}
		got.Release()
	}
}

func cloneHeader(h nats.Header) nats.Header {
	out := nats.Header{}
	for k, v := range h {
		out[k] = slices.Clone(v)
	}
	return out
}

package cenats

import (
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
)

// TestDecodeKeepsTheMessageData checks that a decoded event's data is the
// message's own bytes: copying them doubled what a consumer allocated.
func TestDecodeKeepsTheMessageData(t *testing.T) {
	ev := event.New()
	ev.SetID("1")
	ev.SetSource("test")
	ev.SetType("test.event")
	if err := ev.SetData(event.ApplicationJSON, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	msg, err := Message(&ev, "s")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data()) != `{"k":"v"}` {
		t.Fatalf("data %q", got.Data())
	}
	if &got.Data()[0] != &msg.Data[0] {
		t.Error("the event's data is a copy of the message's")
	}
}

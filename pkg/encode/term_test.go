package encode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// With a term, every event carries it, and a live event's id ends with it:
// a new leader's copy of a change is never dropped by JetStream as a
// duplicate of one a deposed leader stored. Snapshot ids are per term
// already, so items and markers keep their ids.
func TestTermOnEveryEvent(t *testing.T) {
	for _, name := range []string{"added-configmap", "updated-pod", "deleted-configmap", "snapshot-begin", "snapshot-item", "snapshot-end"} {
		t.Run(name, func(t *testing.T) {
			c := findCase(t, name).change(t)
			plain, err := newEncoder(0).EncodeWithin(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			enc := newEncoder(0)
			enc.Term = 90001
			termed, err := enc.EncodeWithin(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := contract.TermOf(termed.Msg.Header); err != nil || got != 90001 {
				t.Errorf("term %d (%v), want 90001", got, err)
			}
			if got, _ := contract.TermOf(plain.Msg.Header); got != 0 {
				t.Errorf("term %d without one set, want 0", got)
			}
			wantID := plain.ID
			if live := !strings.HasPrefix(name, "snapshot-"); live {
				wantID += "/90001"
			}
			if termed.ID != wantID || termed.Msg.Header.Get(contract.HeaderMsgID) != "prod/"+wantID {
				t.Errorf("id %q (Nats-Msg-Id %q), want %q", termed.ID, termed.Msg.Header.Get(contract.HeaderMsgID), wantID)
			}
		})
	}
}

func TestTermMarker(t *testing.T) {
	enc := newEncoder(0)
	msg, err := enc.TermMarker(contract.TermData{Holder: "bridge-b_1a2b", PreviousHolder: "bridge-a_9f8e"}, observedAt)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != enc.Subjects.Term() || !strings.HasSuffix(msg.Subject, "._term") {
		t.Errorf("subject %q", msg.Subject)
	}
	ev, err := cenats.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Validate(); err != nil {
		t.Fatal(err)
	}
	if ev.Type() != contract.TypeTerm || !strings.HasPrefix(ev.ID(), "term/bridge-b_1a2b/") {
		t.Errorf("type %q id %q", ev.Type(), ev.ID())
	}
	var d contract.TermData
	if err := json.Unmarshal(ev.Data(), &d); err != nil || d.PreviousHolder != "bridge-a_9f8e" {
		t.Errorf("data %s (%v)", ev.Data(), err)
	}
	if _, err := contract.TermOf(nats.Header{contract.TermHeader: {"x"}}); err == nil {
		t.Error("a term that is not a number was accepted")
	}
}

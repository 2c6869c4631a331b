package sink

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// markerTerms reads terms as the contract does, with test headers: a
// message without Test-Term is none of a bridge's, and a term exists where
// its sequence holds a message on kb._term.
type markerTerms struct{ s jetstream.Stream }

func (markerTerms) Of(h nats.Header) (uint64, bool) {
	v := h.Get(testTermHeader)
	if v == "" {
		return 0, false
	}
	t, err := strconv.ParseUint(v, 10, 64)
	return t, err == nil
}

func (m markerTerms) Marker(ctx context.Context, seq uint64) (MarkerState, error) {
	msg, err := m.s.GetMsg(ctx, seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return MarkerGone, nil
	case err != nil:
		return 0, err
	case msg.Subject == "kb._term":
		return MarkerStored, nil
	}
	return MarkerAbsent, nil
}

// TestFenceOverwritesForeignMessages: a message on a writer's subject that
// no term of the cluster wrote (no term header; a term far beyond every
// marker; a term below the writer's whose sequence holds no marker) is
// overwritten and counted, and never fences the writer; a message of a
// real newer term still does. Observe reports a foreign last message that
// a scan finds.
func TestFenceOverwritesForeignMessages(t *testing.T) {
	jsRoutes(t, testFenceOverwritesForeignMessages)
}

func testFenceOverwritesForeignMessages(t *testing.T, route jsRoute) {
	js, s := startFenceStream(t)
	ctx := context.Background()
	put := func(subject string, h nats.Header) uint64 {
		t.Helper()
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: []byte("by hand")})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	for i := range 3 {
		put("kb.filler."+strconv.Itoa(i), nats.Header{testTermHeader: {"0"}}) // sequences 1 to 3
	}
	term := put("kb._term", nil) // 4
	f := NewFence(term, markerTerms{s}, s)
	pjs, opts := route(t, js)
	p, err := NewPublisher(pjs, append(opts, WithFence(f), WithBackoff(10*time.Millisecond, 50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	w := &fencedWriter{t: t, term: term, fence: f, pub: p}
	if err := w.write("kb.obj.a", false); err != nil {
		t.Fatal(err)
	}

	forgeries := []struct {
		what   string
		header nats.Header
	}{
		{"no term header", nats.Header{}},
		{"a term beyond every marker", nats.Header{testTermHeader: {"99999999"}}},
		{"an older term whose sequence holds no marker", nats.Header{testTermHeader: {"2"}}},
	}
	for i, forged := range forgeries {
		seq := put("kb.obj.a", forged.header)
		if err := w.write("kb.obj.a", false); err != nil {
			t.Fatalf("%s: the writer's publish over it: %v", forged.what, err)
		}
		if fencedNow(f) || f.Foreign() != int64(i+1) {
			t.Fatalf("%s (sequence %d): fenced %v, %d foreign counted; want not fenced, %d", forged.what, seq, fencedNow(f), f.Foreign(), i+1)
		}
		if got := lastOf(t, s, "kb.obj.a"); got != "term4/"+strconv.Itoa(w.n) {
			t.Fatalf("%s: the subject's last message is %q, want the writer's", forged.what, got)
		}
	}
	if f.Overwrote() != 0 || f.Adopted() != 0 {
		t.Errorf("overwrote %d, adopted %d: foreign messages counted as terms'", f.Overwrote(), f.Adopted())
	}

	// A scan finds a foreign last message and reports it.
	seq := put("kb.obj.b", nats.Header{testTermHeader: {"99999999"}})
	if !f.Observe(ctx, "kb.obj.b", seq, nats.Header{testTermHeader: {"99999999"}}) || f.Foreign() != int64(len(forgeries)+1) {
		t.Errorf("Observe of a foreign message: not reported (%d counted)", f.Foreign())
	}
	if f.Observe(ctx, "kb.obj.a", seq, nats.Header{testTermHeader: {strconv.FormatUint(term, 10)}}) {
		t.Errorf("Observe of the writer's own message reported it foreign")
	}

	// A real newer term fences.
	newer := put("kb._term", nil)
	put("kb.obj.c", nats.Header{testTermHeader: {strconv.FormatUint(newer, 10)}})
	if err := w.write("kb.obj.c", false); !errors.Is(err, ErrFenced) {
		t.Errorf("over a message of term %d, a real newer term: %v, want ErrFenced", newer, err)
	}
}

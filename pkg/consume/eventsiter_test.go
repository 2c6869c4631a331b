package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// collect runs Events to the end and lists what it yielded, one string
// per event ("verb key@rv", "verb id" for markers) or error.
func collect(t *testing.T, c *Client, filters []Filter, opts ...EventsOption) []string {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []string
	for ev, err := range c.Events(ctx, filters, opts...) {
		out = append(out, line(ev, err))
	}
	return out
}

func line(ev *Event, err error) string {
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return fmt.Sprintf("undecodable seq %d", de.Seq)
		}
		return "error " + err.Error()
	}
	if ev.Verb.IsMarker() {
		return fmt.Sprintf("%s %s", ev.Verb, ev.SnapshotID)
	}
	if _, ok := ev.Object.(*corev1.ConfigMap); !ok {
		return fmt.Sprintf("%s %T", ev.Verb, ev.Object)
	}
	return fmt.Sprintf("%s %s", ev.Verb, describe(ev.Object))
}

func TestEventsInStreamOrder(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	history(f)
	c := testClient(t, js)

	var fenced []string
	got := collect(t, c, []Filter{{Resource: "configmaps"}}, UntilCaughtUp(), OnFenced(func(ev *Event) { fenced = append(fenced, describe(ev.Object)) }))
	// The stream, as history wrote it, without term markers and without
	// what the deposed leader stored after term b began. (The
	// per-subject limit of 8 drops nothing here.)
	want := []string{
		"added ns/a@10", "added ns/b@11", "added ns/c@12", "added ns/d@13", "added ns/f@15",
		"snapshot.begin s1", "snapshot.item ns/a@10", "snapshot.item ns/b@11", "snapshot.item ns/c@12", "snapshot.item ns/d@13", "snapshot.item ns/f@15", "snapshot.end s1",
		"updated ns/a@14",
		"snapshot.begin s2", "snapshot.item ns/a@14", "snapshot.item ns/b@11", "snapshot.item ns/f@21", "snapshot.end s2",
		"added ns/e@22",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(fenced, []string{"ns/late@20", "ns/f@21"}) {
		t.Errorf("fenced %v", fenced)
	}

	// One object: its events only, no markers.
	got = collect(t, c, []Filter{{Resource: "configmaps", Namespace: "ns", Name: "a"}}, UntilCaughtUp())
	want = []string{"added ns/a@10", "snapshot.item ns/a@10", "updated ns/a@14", "snapshot.item ns/a@14"}
	if !slices.Equal(got, want) {
		t.Errorf("one object\n got %q\nwant %q", got, want)
	}
	// From a sequence; and new events only, of which there are none yet.
	from := f.seqs[len(f.seqs)-1]
	if got := collect(t, c, []Filter{{Resource: "configmaps"}}, UntilCaughtUp(), DeliverFrom(from)); !slices.Equal(got, []string{"added ns/e@22"}) {
		t.Errorf("DeliverFrom(%d): %q", from, got)
	}
	if got := collect(t, c, []Filter{{Resource: "configmaps"}}, UntilCaughtUp(), DeliverNew()); len(got) != 0 {
		t.Errorf("DeliverNew: %q", got)
	}
}

// A durable consumer acknowledges an event once the loop body is done with
// it: a reader that stops in the middle of an event gets it again.
func TestEventsDurableAtLeastOnce(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	for i := range 20 {
		f.added(cm("ns", fmt.Sprintf("o%02d", i), fmt.Sprintf("u%d", i), fmt.Sprint(100+i)))
	}
	c := testClient(t, js)
	_, ctx := ktesting.NewTestContext(t)
	var first []string
	for ev, err := range c.Events(ctx, []Filter{{Resource: "configmaps"}}, Durable("svc")) {
		first = append(first, line(ev, err))
		if len(first) == 5 {
			break // busy with the fifth: it is not acknowledged
		}
	}
	rest := collect(t, c, []Filter{{Resource: "configmaps"}}, Durable("svc"), UntilCaughtUp())
	// Redeliveries need not come in stream order.
	slices.Sort(rest)
	var want []string
	for i := 4; i < 20; i++ {
		want = append(want, fmt.Sprintf("added ns/o%02d@%d", i, 100+i))
	}
	if !slices.Equal(rest, want) {
		t.Errorf("after a break at %q the durable consumer delivered %q, want %q", first[4], rest, want)
	}
	f.added(cm("ns", "new", "u99", "200"))
	if got := collect(t, c, []Filter{{Resource: "configmaps"}}, Durable("svc"), UntilCaughtUp()); !slices.Equal(got, []string{"added ns/new@200"}) {
		t.Errorf("third reader: %q", got)
	}
}

// A message that does not decode is an error, and the iteration can go on
// past it; a durable consumer does not deliver it again.
func TestEventsDecodeError(t *testing.T) {
	_, js, s := startJetStream(t)
	f := newFab(t, s)
	f.added(cm("ns", "a", "u1", "10"))
	bad := f.put(&nats.Msg{Subject: "kb.c1.core.v1.configmaps.ns.b", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"x"}, "ce-source": {"s"}, "ce-type": {"io.kubebridge.object.added"}}, Data: []byte("{")})
	f.added(cm("ns", "c", "u3", "11"))
	c := testClient(t, js)
	want := []string{"added ns/a@10", fmt.Sprintf("undecodable seq %d", bad), "added ns/c@11"}
	for _, opts := range [][]EventsOption{{UntilCaughtUp()}, {UntilCaughtUp(), Durable("d")}} {
		if got := collect(t, c, []Filter{{Resource: "configmaps"}}, opts...); !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got := collect(t, c, []Filter{{Resource: "configmaps"}}, UntilCaughtUp(), Durable("d")); len(got) != 0 {
		t.Errorf("the durable consumer delivered again: %q", got)
	}
	if got := collect(t, c, []Filter{{Resource: ""}}); len(got) != 1 || got[0] == "" {
		t.Errorf("a bad filter: %q", got)
	}
}

// A durable consumer's acknowledgement that fails (here: the connection
// closed under the loop body) is logged, not dropped: the message comes
// again, and the reader should know why.
func TestEventsAckErrorLogged(t *testing.T) {
	nc, _, s := startJetStream(t)
	f := newFab(t, s)
	f.added(cm("ns", "a", "u1", "100"))
	f.added(cm("ns", "b", "u2", "101"))
	own, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	ownJS, err := jetstream.New(own)
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	for _, err := range testClient(t, ownJS).Events(ctx, []Filter{{Resource: "configmaps"}}, Durable("svc")) {
		if err != nil {
			break
		}
		own.Close()
	}
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if !strings.Contains(logs, "Cannot settle a message with the durable consumer") || !strings.Contains(logs, "connection closed") {
		t.Errorf("no log line for the failed acknowledgement; the log:\n%s", logs)
	}
}

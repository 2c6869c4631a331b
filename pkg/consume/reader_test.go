package consume

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestReaderReplacesAStalledConsumer pauses a reader's consumer (to the
// reader, a pull the server keeps without an answer) before the stream
// holds anything: the reader must not wait forever for the messages
// stored next, and must not skip them when it replaces the consumer,
// though none was delivered and it was created to deliver only new ones.
func TestReaderReplacesAStalledConsumer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	r := &reader{js: js, stream: "R", resume: true, stall: 2 * time.Second, cfg: jetstream.ConsumerConfig{
		FilterSubjects: []string{"r.a"}, DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckNonePolicy,
	}}
	if err := r.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.close(ctx)
	if _, err := js.PauseConsumer(ctx, "R", r.cons.CachedInfo().Name, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"r.b", "r.a", "r.a"} {
		if _, err := js.Publish(ctx, subject, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	var got []uint64
	for len(got) < 2 && time.Now().Before(deadline) {
		m, err := r.next(ctx, fetchWait)
		if err != nil {
			t.Fatal(err)
		}
		if m.Msg != nil {
			got = append(got, m.meta.Sequence.Stream)
			continue
		}
		if drained, err := r.drained(ctx); err != nil || drained {
			t.Fatalf("drained %v (%v) with messages of r.a stored", drained, err)
		}
		if err := r.replaceStalled(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("delivered seqs %v, want [2 3]", got)
	}
}

// TestReaderLastPerSubjectSkipsARemovedMessage removes one of the messages
// a last-per-subject consumer listed when it was created (a delete's
// roll-up, as the bridge publishes it) before the consumer delivers it,
// in a stream written no more: the reader must go on with the rest of
// the list and the roll-up within seconds (unbounded pulls resumed after
// about 15 s here), and without replacing the consumer.
func TestReaderLastPerSubjectSkipsARemovedMessage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.MemoryStorage, MaxMsgsPerSubject: 8, AllowRollup: true}); err != nil {
		t.Fatal(err)
	}
	const subjects = 20
	for i := range subjects {
		if _, err := js.Publish(ctx, fmt.Sprintf("r.%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Paused until the roll-up below is stored, so that the server finds
	// r.5's listed message gone when it comes to it. Not a whole number of
	// pull expiries: a pull that expires as the server resumes loses it
	// the listed message it was about to send (the server's other defect,
	// see lastPerSubjectPullExpiry).
	resume := time.Now().Add(1500 * time.Millisecond)
	r := &reader{js: js, stream: "R", stall: time.Hour, cfg: jetstream.ConsumerConfig{
		FilterSubjects: []string{"r.>"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy,
		PauseUntil: &resume,
	}}
	if err := r.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.close(ctx)
	rollup := nats.NewMsg("r.5")
	rollup.Header.Set(contract.HeaderRollup, contract.RollupSubject)
	if _, err := js.PublishMsg(ctx, rollup); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(resume) {
		t.Skip("the roll-up was stored after the consumer resumed; the case is not set up")
	}
	// Every listed message but r.5's, then the roll-up.
	want := subjects
	deadline := time.Now().Add(10 * time.Second)
	var got []uint64
	for len(got) < want && time.Now().Before(deadline) {
		m, err := r.next(ctx, fetchWait)
		if err != nil {
			t.Fatal(err)
		}
		if m.Msg != nil {
			got = append(got, m.meta.Sequence.Stream)
		}
	}
	if len(got) != want || got[len(got)-1] != subjects+1 {
		t.Fatalf("delivered seqs %v within 10s, want %d ending with the roll-up's %d", got, want, subjects+1)
	}
}

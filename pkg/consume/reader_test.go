package consume

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/natstest"
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

package consume

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/netproxy"
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

// readSeqs reads until the message with stream sequence last has come, or
// until the deadline, and returns the sequences delivered.
func readSeqs(t *testing.T, ctx context.Context, r *reader, last uint64, within time.Duration) []uint64 {
	t.Helper()
	var got []uint64
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		m, err := r.next(ctx, fetchWait)
		if err != nil {
			t.Fatal(err)
		}
		if m.Msg == nil {
			continue
		}
		got = append(got, m.meta.Sequence.Stream)
		if m.meta.Sequence.Stream >= last {
			break
		}
	}
	return got
}

func seqsFrom(first, last uint64) []uint64 {
	var s []uint64
	for seq := first; seq <= last; seq++ {
		s = append(s, seq)
	}
	return s
}

// TestReaderLosesNothingOnALostLink freezes the link between a reader and
// the server while the server sends it messages, then cuts it. The server
// counts what it wrote into the dead link as delivered, and a consumer
// without acknowledgements never sends it again: the reader must notice
// the reconnect and go on from the last message it got.
func TestReaderLosesNothingOnALostLink(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, direct := natstest.JetStream(t, srv.ClientURL())
	if _, err := direct.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}}); err != nil {
		t.Fatal(err)
	}
	proxy, err := netproxy.New(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	nc, err := nats.Connect("nats://"+proxy.Addr(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := &reader{js: natstest.JetStreamOf(t, nc), stream: "R", resume: true, cfg: jetstream.ConsumerConfig{
		FilterSubjects: []string{"r.a"}, AckPolicy: jetstream.AckNonePolicy,
	}}
	if _, err := direct.Publish(ctx, "r.a", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.close(ctx)
	if got := readSeqs(t, ctx, r, 1, 10*time.Second); len(got) != 1 {
		t.Fatalf("before the link froze: seqs %v, want [1]", got)
	}

	proxy.Pause()
	const last = 21
	for range last - 1 {
		if _, err := direct.Publish(ctx, "r.a", nil); err != nil {
			t.Fatal(err)
		}
	}
	name := r.cons.CachedInfo().Name
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := direct.Consumer(ctx, "R", name)
		if err != nil {
			t.Fatal(err)
		}
		if c.CachedInfo().Delivered.Stream == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server delivered up to seq %d into the frozen link, want %d", c.CachedInfo().Delivered.Stream, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	proxy.Cut()
	proxy.Resume()
	proxy.Restore()

	if got, want := readSeqs(t, ctx, r, last, 20*time.Second), seqsFrom(2, last); !slices.Equal(got, want) {
		t.Fatalf("after the reconnect: seqs %v, want %v", got, want)
	}
}

// TestReaderGoesOnAfterAServerRestart restarts the server under a reader.
// An ephemeral consumer's state is held in memory, so the consumer is gone
// with the server; the reader must create it again when it reconnects,
// well before heartbeats it waits for in vain would tell it (30 s).
func TestReaderGoesOnAfterAServerRestart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	opts := server.Options{JetStream: true, Port: natstest.FreePort(t), StoreDir: t.TempDir()}
	srv := natstest.Server(t, opts)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js := natstest.JetStreamOf(t, nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "r.a", nil); err != nil {
		t.Fatal(err)
	}
	r := &reader{js: js, stream: "R", resume: true, cfg: jetstream.ConsumerConfig{
		FilterSubjects: []string{"r.a"}, AckPolicy: jetstream.AckNonePolicy,
	}}
	if err := r.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.close(ctx)
	if got := readSeqs(t, ctx, r, 1, 10*time.Second); len(got) != 1 {
		t.Fatalf("before the restart: seqs %v, want [1]", got)
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	natstest.Server(t, opts)
	for deadline := time.Now().Add(10 * time.Second); !nc.IsConnected(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not reconnected")
		}
	}
	// The server may take a publish before its JetStream is back, and
	// answer none: it is sent again, under an id for its duplicates.
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.Publish(pctx, "r.a", nil, jetstream.WithMsgID("after"))
		cancel()
		if err == nil {
			break
		}
		if attempt == 10 {
			t.Fatalf("publish after the restart: %v", err)
		}
	}
	if got := readSeqs(t, ctx, r, 2, 15*time.Second); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("after the restart: seqs %v, want [2]", got)
	}
}

// TestReaderGoesBackForMissedDeliveries: messages the consumer delivered
// that never reached the reader are read again from where it stood,
// whatever noticed the loss. Here its pull is stopped, with what it had
// received and not handed out, and a new one started on the same
// consumer, as a pull that nats.go sends again after a reconnect the
// reader did not notice.
func TestReaderGoesBackForMissedDeliveries(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		for range n {
			if _, err := js.Publish(ctx, "r.a", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(10)
	r := &reader{js: js, stream: "R", resume: true, cfg: jetstream.ConsumerConfig{
		FilterSubjects: []string{"r.a"}, AckPolicy: jetstream.AckNonePolicy,
	}}
	if err := r.open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.close(ctx)
	got := readSeqs(t, ctx, r, 1, 10*time.Second)
	r.stopPull()
	it, err := r.cons.Messages(jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		t.Fatal(err)
	}
	r.it = it
	publish(5)
	got = append(got, readSeqs(t, ctx, r, 15, 10*time.Second)...)
	if want := seqsFrom(1, 15); !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
}

// TestScanTakesAMissedDeliveryForALostConsumer: a scan of markers whose
// consumer sent a message that never arrived (taken here by another
// handle of the consumer, as a lost link loses it) fails as a lost
// consumer does, so that a bootstrap starts over rather than ending.
func TestScanTakesAMissedDeliveryForALostConsumer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	// More than one fetch's batch (256): the other handle's fetch, made
	// while the first batch is handed out, takes the first message after it.
	for range 300 {
		if _, err := js.Publish(ctx, "r.t", nil); err != nil {
			t.Fatal(err)
		}
	}
	taken := 0
	err = scanSubject(ctx, js, "R", "r.t", func(uint64, nats.Header) error {
		if taken > 0 {
			return nil
		}
		name := <-s.ConsumerNames(ctx).Name()
		other, err := js.Consumer(ctx, "R", name)
		if err != nil {
			return err
		}
		batch, err := other.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		for range batch.Messages() {
			taken++
		}
		return nil
	})
	if !errors.Is(err, errConsumerLost) {
		t.Fatalf("err %v with %d message taken by another handle, want errConsumerLost", err, taken)
	}
}

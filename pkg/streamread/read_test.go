package streamread_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/pkg/streamread"
)

func newStream(t *testing.T) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	s, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "READ", Subjects: []string{"r.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	return js, s
}

func publish(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := range n {
		if _, err := js.Publish(context.Background(), subject, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadLastPerSubject: a read of the last message per subject hands on
// each subject's last message once, oldest first, and returns.
func TestReadLastPerSubject(t *testing.T) {
	js, s := newStream(t)
	for round := range 3 {
		for i := range 50 {
			publish(t, js, fmt.Sprintf("r.obj.%d", i), 1+round%2)
		}
	}
	got := map[string]uint64{}
	var prev uint64
	err := streamread.Read(context.Background(), s, jetstream.ConsumerConfig{FilterSubjects: []string{"r.obj.*"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy},
		streamread.Fetching{Batch: 7, Wait: 5 * time.Second}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
			if _, dup := got[m.Subject()]; dup {
				t.Errorf("%s handed on twice", m.Subject())
			}
			if meta.Sequence.Stream <= prev {
				t.Errorf("seq %d after %d: not oldest first", meta.Sequence.Stream, prev)
			}
			prev = meta.Sequence.Stream
			got[m.Subject()] = meta.Sequence.Stream
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d subjects, want 50", len(got))
	}
	for subj, seq := range got {
		last, err := s.GetLastMsgForSubject(context.Background(), subj)
		if err != nil {
			t.Fatal(err)
		}
		if last.Sequence != seq {
			t.Errorf("%s: seq %d handed on, its last message is %d", subj, seq, last.Sequence)
		}
	}
}

// TestReadStopsWhereTheStreamStood: messages stored after the consumer
// exists are not waited for; the read ends at the last sequence the stream
// had then, however busy the stream stays.
func TestReadStopsWhereTheStreamStood(t *testing.T) {
	js, s := newStream(t)
	publish(t, js, "r.a", 20)
	c, err := streamread.Open(context.Background(), s, jetstream.ConsumerConfig{FilterSubjects: []string{"r.>"}, AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Delete(context.Background())
	if c.LastSeq != 20 || c.Pending != 20 {
		t.Fatalf("LastSeq %d, Pending %d; want 20 and 20", c.LastSeq, c.Pending)
	}
	publish(t, js, "r.b", 30) // after Open
	var last uint64
	n := 0
	err = c.ReadAll(context.Background(), streamread.Fetching{Batch: 8, Wait: 5 * time.Second}, func(_ jetstream.Msg, meta *jetstream.MsgMetadata) error {
		n++
		last = meta.Sequence.Stream
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != 20 || n != 20 {
		t.Errorf("read %d messages up to seq %d, want 20 up to 20", n, last)
	}
}

// TestReadEmpty: nothing pending, nothing to wait for.
func TestReadEmpty(t *testing.T) {
	_, s := newStream(t)
	calls := 0
	err := streamread.Read(context.Background(), s, jetstream.ConsumerConfig{FilterSubjects: []string{"r.>"}, AckPolicy: jetstream.AckNonePolicy},
		streamread.Fetching{Batch: 10, Wait: time.Second}, func(jetstream.Msg, *jetstream.MsgMetadata) error { calls++; return nil })
	if err != nil || calls != 0 {
		t.Errorf("err %v, %d calls; want none", err, calls)
	}
}

// takeBy fetches n messages of c's consumer through another handle, as
// another client of the consumer would: to c's reader, deliveries that
// never arrive, as those written into a lost link.
func takeBy(t *testing.T, js jetstream.JetStream, c *streamread.Consumer, n int) {
	t.Helper()
	other, err := js.Consumer(context.Background(), "READ", c.CachedInfo().Name)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := other.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range batch.Messages() {
		got++
	}
	if got != n {
		t.Fatalf("the other handle took %d messages, want %d (%v)", got, n, batch.Error())
	}
}

// TestReadAllReportsMissedDeliveries: a read whose consumer delivered
// messages it did not receive, first or last, fails with ErrMissed rather
// than ending as if it had read everything.
func TestReadAllReportsMissedDeliveries(t *testing.T) {
	cfg := jetstream.ConsumerConfig{FilterSubjects: []string{"r.>"}, AckPolicy: jetstream.AckNonePolicy}
	t.Run("first", func(t *testing.T) {
		js, s := newStream(t)
		publish(t, js, "r.a", 10)
		c, err := streamread.Open(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Delete(context.Background())
		takeBy(t, js, c, 3)
		err = c.ReadAll(context.Background(), streamread.Fetching{Batch: 4, Wait: time.Second}, func(jetstream.Msg, *jetstream.MsgMetadata) error { return nil })
		if !errors.Is(err, streamread.ErrMissed) {
			t.Fatalf("err %v, want ErrMissed", err)
		}
	})
	t.Run("last", func(t *testing.T) {
		js, s := newStream(t)
		publish(t, js, "r.a", 5)
		c, err := streamread.Open(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Delete(context.Background())
		var seqs []uint64
		err = c.ReadAll(context.Background(), streamread.Fetching{Batch: 2, Wait: time.Second}, func(_ jetstream.Msg, meta *jetstream.MsgMetadata) error {
			seqs = append(seqs, meta.Sequence.Stream)
			if len(seqs) == 2 {
				takeBy(t, js, c, 3)
			}
			return nil
		})
		if !errors.Is(err, streamread.ErrMissed) {
			t.Fatalf("err %v after seqs %v, want ErrMissed", err, seqs)
		}
	})
}

package sink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fillSubjects stores rounds messages on each of subjects subjects under
// prefix, the last round's header "round" telling which one it is.
func fillSubjects(tb testing.TB, js jetstream.JetStream, prefix string, subjects, rounds int) jetstream.Stream {
	tb.Helper()
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TAIL", Subjects: []string{"kb.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		tb.Fatal(err)
	}
	data := make([]byte, 512)
	for r := range rounds {
		for i := range subjects {
			h := nats.Header{"ce-type": []string{"io.kubebridge.object.updated"}, "ce-uid": []string{fmt.Sprintf("uid-%d", i)}, "round": []string{fmt.Sprint(r)}}
			if _, err := js.PublishMsgAsync(&nats.Msg{Subject: fmt.Sprintf("%s.ns.o%d", prefix, i), Header: h, Data: data}); err != nil {
				tb.Fatal(err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(2 * time.Minute):
			tb.Fatal("publishing did not complete")
		}
	}
	return s
}

func TestTailLastPerSubject(t *testing.T) {
	js := startJetStream(t)
	const subjects, rounds = 3000, 3
	s := fillSubjects(t, js, "kb.c.core.v1.configmaps", subjects, rounds)
	// Other types and markers must not be read.
	if _, err := js.Publish(context.Background(), "kb.c.core.v1.secrets.ns.x", nil); err != nil {
		t.Fatal(err)
	}
	tail := Tail{Stream: s}
	seen := map[string]string{}
	err := tail.LastPerSubject(context.Background(), "kb.c.core.v1.configmaps.*.*", func(subject string, _ uint64, h nats.Header) error {
		if _, dup := seen[subject]; dup {
			t.Errorf("%s delivered twice", subject)
		}
		seen[subject] = h.Get("round")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != subjects {
		t.Fatalf("read %d subjects, want %d", len(seen), subjects)
	}
	for subj, round := range seen {
		if round != fmt.Sprint(rounds-1) {
			t.Fatalf("%s: read round %s, want the last one, %d", subj, round, rounds-1)
		}
	}
	m, seq, err := tail.Last(context.Background(), "kb.c.core.v1.configmaps.ns.o7")
	if err != nil || m.Header.Get("round") != fmt.Sprint(rounds-1) || len(m.Data) != 512 {
		t.Fatalf("Last = %v, %v", m, err)
	}
	// o7 is the eighth subject of the last round.
	if want := uint64((rounds-1)*subjects + 8); seq != want {
		t.Errorf("Last's sequence = %d, want %d", seq, want)
	}
	// Every reads every message of its subjects, in stream order.
	var every []uint64
	err = tail.Every(context.Background(), []string{"kb.c.core.v1.configmaps.ns.o7", "kb.c.core.v1.configmaps.ns.o8"}, func(_ string, seq uint64, _ nats.Header) error {
		every = append(every, seq)
		return nil
	})
	if want := []uint64{8, 9, subjects + 8, subjects + 9, 2*subjects + 8, 2*subjects + 9}; err != nil || fmt.Sprint(every) != fmt.Sprint(want) {
		t.Errorf("Every read %v (%v), want %v", every, err, want)
	}
	// The consumer is gone afterwards.
	info, err := s.Info(context.Background())
	if err != nil || info.State.Consumers != 0 {
		t.Errorf("consumers left: %v (%v)", info.State.Consumers, err)
	}
}

// BenchmarkTailLastPerSubject reads the last message of 100,000 subjects
// (each holding 2 messages) the way the bridge does at start-up; the
// baseline, in the same run, reads every message of the stream headers-only
// with an ordered consumer.
//
//	go test -run '^$' -bench TailLastPerSubject -benchtime 3x ./pkg/sink
func BenchmarkTailLastPerSubject(b *testing.B) {
	js := startJetStream(b)
	const subjects, rounds = 100000, 2
	s := fillSubjects(b, js, "kb.c.core.v1.configmaps", subjects, rounds)
	ctx := context.Background()
	b.Run("last-per-subject", func(b *testing.B) {
		for range b.N {
			n := 0
			start := time.Now()
			if err := (Tail{Stream: s}).LastPerSubject(ctx, "kb.c.core.v1.configmaps.*.*", func(string, uint64, nats.Header) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			if n != subjects {
				b.Fatalf("read %d subjects", n)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "subjects/s")
		}
	})
	b.Run("baseline-read-all", func(b *testing.B) {
		for range b.N {
			c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			n := 0
			for n < subjects*rounds {
				batch, err := c.Fetch(min(2048, subjects*rounds-n), jetstream.FetchMaxWait(5*time.Second))
				if err != nil {
					b.Fatal(err)
				}
				for range batch.Messages() {
					n++
				}
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
		}
	})
}

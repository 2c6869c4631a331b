package sink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/internal/natstest"
)

func startJetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	s := startServer(t, true)
	nc, err := Connect(context.Background(), s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return natstest.JetStreamOf(t, nc)
}

// jsRoute is how a test's Publisher on js gets its outcomes: the
// AsyncPublisher and options to make it with.
type jsRoute func(t *testing.T, js jetstream.JetStream) (AsyncPublisher, []Option)

// jsRoutes runs test twice: with a goroutine per message in flight waiting
// on its future, and with Acks installed on a JetStream of js's connection,
// as the bridge makes it.
func jsRoutes(t *testing.T, test func(*testing.T, jsRoute)) {
	t.Run("futures", func(t *testing.T) {
		test(t, func(_ *testing.T, js jetstream.JetStream) (AsyncPublisher, []Option) { return js, nil })
	})
	t.Run("acks", func(t *testing.T) {
		test(t, func(t *testing.T, js jetstream.JetStream) (AsyncPublisher, []Option) {
			acks := NewAcks()
			routed, err := jetstream.New(js.Conn(), acks.JetStreamOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			return routed, []Option{WithAcks(acks)}
		})
	})
}

func TestSamePublishTwiceIsStoredOnce(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	info, err := EnsureStream(ctx, js, jetstream.StreamConfig{Name: "KB", Subjects: []string{"kb.>"}, Duplicates: time.Minute}, "kb.c1.>")
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Name != "KB" {
		t.Fatalf("info %+v", info.Config)
	}
	p, err := NewPublisher(js)
	if err != nil {
		t.Fatal(err)
	}
	var dup []bool
	obs := observerFunc(func(_ *nats.Msg, duplicate bool) { dup = append(dup, duplicate) })
	p.opts.observer = obs
	same := func() Envelope {
		return Envelope{Msg: &nats.Msg{Subject: "kb.c1.core.v1.configmaps.default.a", Header: nats.Header{jetstream.MsgIDHeader: []string{"uid/5/added"}}, Data: []byte(`{}`)}}
	}
	runPublisher(t, p, []Envelope{same()})
	runPublisher(t, p, []Envelope{same()})
	s, err := js.Stream(ctx, "KB")
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", si.State.Msgs)
	}
	if len(dup) != 2 || dup[0] || !dup[1] {
		t.Errorf("duplicate flags %v, want [false true]", dup)
	}
}

func TestEnsureStreamChecksExistingSubjects(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"kb.prod.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStream(ctx, js, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"kb.>"}}, "kb.prod.>"); err != nil {
		t.Errorf("stream covering our cluster rejected: %v", err)
	}
	_, err := EnsureStream(ctx, js, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"kb.>"}}, "kb.staging.>")
	if !errors.Is(err, ErrStreamSubjects) {
		t.Errorf("got %v, want ErrStreamSubjects", err)
	}
}

func TestSubjectCovers(t *testing.T) {
	for _, c := range []struct {
		pattern, sub string
		want         bool
	}{
		{"kb.>", "kb.prod.>", true},
		{"kb.>", "kb", false},
		{"kb.*.>", "kb.prod.>", true},
		{"kb.prod.>", "kb.*.>", false},
		{"kb.prod.>", "kb.prod.>", true},
		{">", "kb.prod.>", true},
		{"kb.prod", "kb.prod", true},
		{"kb.prod", "kb.prod.x", false},
		{"kb.*", "kb.prod", true},
		{"kb.*", "kb.>", false},
		{"other.>", "kb.prod.>", false},
	} {
		if got := SubjectCovers(c.pattern, c.sub); got != c.want {
			t.Errorf("SubjectCovers(%q, %q) = %v, want %v", c.pattern, c.sub, got, c.want)
		}
	}
}

type observerFunc func(msg *nats.Msg, duplicate bool)

func (f observerFunc) Acked(m *nats.Msg, _ time.Duration, d bool) { f(m, d) }
func (observerFunc) Retried(*nats.Msg, error)                     {}
func (observerFunc) Rejected(*nats.Msg, error)                    {}
func (observerFunc) InFlight(int)                                 {}

package sink

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/internal/recorder"
)

// startServer starts a NATS server, with JetStream or without.
func startServer(t testing.TB, withJetStream bool) *server.Server {
	t.Helper()
	return natstest.Server(t, server.Options{JetStream: withJetStream})
}

func jetStreamOn(t *testing.T, s *server.Server) jetstream.JetStream {
	t.Helper()
	_, js := natstest.JetStream(t, s.ClientURL())
	return js
}

// attemptLog is a WithAttemptObserver that keeps the errors.
type attemptLog struct{ recorder.Log[error] }

func (a *attemptLog) observe(err error) { a.Append(err) }

func (a *attemptLog) get() []error { return a.All() }

var kbStream = jetstream.StreamConfig{Name: "KB", Subjects: []string{"kb.>"}}

// A server without JetStream answers nobody on the JetStream API: the same
// "no responders" that a restarting server or a cluster without a meta
// leader gives. WaitForStream keeps trying, logs that once per log
// interval, and returns the stream as soon as JetStream is there.
func TestWaitForStreamWaitsUntilJetStreamIsEnabled(t *testing.T) {
	s := startServer(t, false)
	js := jetStreamOn(t, s)
	ctx, logs := captureLogs(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	attempts := &attemptLog{}
	type result struct {
		info *jetstream.StreamInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := WaitForStream(ctx, js, kbStream, "kb.c1.>", WithLogEvery(time.Hour),
			WithAttemptObserver(attempts.observe), withWaitBackoff(5*time.Millisecond, 20*time.Millisecond))
		done <- result{info, err}
	}()

	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return len(attempts.get()) >= 3, nil
	}); err != nil {
		t.Fatalf("gave up waiting for 20s until three attempts have failed: %d did", len(attempts.get()))
	}
	select {
	case r := <-done:
		t.Fatalf("WaitForStream returned %v while JetStream is off", r.err)
	default:
	}
	for _, err := range attempts.get() {
		if !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("attempt failed with %v, want no responders", err)
		}
	}
	waiting := entries(logs, "Waiting for JetStream")
	if len(waiting) != 1 {
		t.Fatalf("%d 'Waiting for JetStream' lines after %d attempts with a log interval of an hour, want 1", len(waiting), len(attempts.get()))
	}
	if got := value(waiting[0], "stream"); got != "KB" {
		t.Errorf("logged stream %v", got)
	}
	if err, _ := value(waiting[0], "err").(error); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("logged err %v", value(waiting[0], "err"))
	}

	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("WaitForStream after JetStream came up: %v", r.err)
	}
	if r.info.Config.Name != "KB" {
		t.Errorf("got stream %+v", r.info.Config)
	}
	if len(entries(logs, "JetStream is available")) != 1 {
		t.Errorf("no 'JetStream is available' line")
	}
}

// Errors that are the caller's to fix are returned after one attempt.
func TestWaitForStreamReturnsConfigurationErrorsAtOnce(t *testing.T) {
	js := jetStreamOn(t, startServer(t, true))
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"kb.prod.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  jetstream.StreamConfig
		need string
		want func(error) bool
	}{
		{"existing stream does not cover our subjects", jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"kb.>"}}, "kb.staging.>",
			func(err error) bool { return errors.Is(err, ErrStreamSubjects) }},
		{"replicas the server cannot have", jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3}, "r3.>",
			func(err error) bool { var e *jetstream.APIError; return errors.As(err, &e) && e.ErrorCode == 10074 }},
		{"subjects overlap another stream", jetstream.StreamConfig{Name: "OVERLAP", Subjects: []string{"kb.prod.x.>"}}, "kb.prod.x.>",
			func(err error) bool { var e *jetstream.APIError; return errors.As(err, &e) && e.ErrorCode == 10065 }},
		{"invalid stream name", jetstream.StreamConfig{Name: "bad.name", Subjects: []string{"b.>"}}, "b.>",
			func(err error) bool { return errors.Is(err, jetstream.ErrInvalidStreamName) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			attempts := &attemptLog{}
			_, err := WaitForStream(ctx, js, c.cfg, c.need, WithAttemptObserver(attempts.observe), withWaitBackoff(time.Millisecond, time.Millisecond))
			if !c.want(err) {
				t.Errorf("got %v", err)
			}
			if n := len(attempts.get()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
		})
	}
}

func TestWaitForStreamEndsWithContext(t *testing.T) {
	js := jetStreamOn(t, startServer(t, false))
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		attempts := &attemptLog{}
		done := make(chan error, 1)
		go func() {
			_, err := WaitForStream(ctx, js, kbStream, "kb.>", WithAttemptObserver(attempts.observe), withWaitBackoff(time.Millisecond, 5*time.Millisecond))
			done <- err
		}()
		if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return len(attempts.get()) > 0, nil
		}); err != nil {
			t.Fatalf("gave up waiting for 20s until an attempt has failed")
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want it to wrap context.Canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := WaitForStream(ctx, js, kbStream, "kb.>", withWaitBackoff(time.Millisecond, 5*time.Millisecond))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want it to wrap context.DeadlineExceeded", err)
		}
	})
	t.Run("already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := WaitForStream(ctx, js, kbStream, "kb.>"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want it to wrap context.Canceled", err)
		}
	})
}

// hangingManager does not answer its first hang lookups until their
// context ends, like a server that takes a request and never replies.
type hangingManager struct {
	hang  int
	calls int
}

type cachedStream struct {
	jetstream.Stream
	info *jetstream.StreamInfo
}

func (s cachedStream) CachedInfo() *jetstream.StreamInfo { return s.info }

func (m *hangingManager) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	m.calls++
	if m.calls <= m.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return cachedStream{info: &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: name, Subjects: []string{"kb.>"}}}}, nil
}

func (m *hangingManager) CreateStream(context.Context, jetstream.StreamConfig) (jetstream.Stream, error) {
	return nil, errors.New("unexpected CreateStream")
}

// One attempt that hangs does not hang WaitForStream: it runs out of its
// own time and the next attempt is made.
func TestWaitForStreamAttemptTimeout(t *testing.T) {
	m := &hangingManager{hang: 2}
	attempts := &attemptLog{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := WaitForStream(ctx, m, kbStream, "kb.>", WithAttemptTimeout(10*time.Millisecond),
		WithAttemptObserver(attempts.observe), withWaitBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Name != "KB" {
		t.Errorf("got %+v", info.Config)
	}
	errs := attempts.get()
	if len(errs) != 2 {
		t.Fatalf("attempt errors %v, want two timeouts", errs)
	}
	for _, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("attempt error %v, want a deadline", err)
		}
	}
}

func TestWaitOptionsRejectBadValues(t *testing.T) {
	for _, opt := range []WaitOption{WithAttemptTimeout(0), WithLogEvery(-time.Second)} {
		if _, err := WaitForStream(context.Background(), &hangingManager{}, kbStream, "kb.>", opt); err == nil {
			t.Error("bad option accepted")
		}
	}
}

func TestRetryable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("sink: create stream KB for [kb.>]: %w", err) }
	api := func(code jetstream.ErrorCode) error {
		return &jetstream.APIError{Code: 503, ErrorCode: code, Description: "test"}
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{wrap(nats.ErrNoResponders), true},
		{wrap(jetstream.ErrJetStreamNotEnabled), true},
		{wrap(api(10076)), true}, // JetStream not enabled, as the server says it
		{wrap(nats.ErrTimeout), true},
		{wrap(context.DeadlineExceeded), true},
		{wrap(nats.ErrDisconnected), true},
		{wrap(nats.ErrConnectionReconnecting), true},
		{wrap(api(10008)), true}, // JetStream system temporarily unavailable
		{wrap(api(10009)), true}, // cluster can not handle request
		{wrap(api(10023)), true}, // insufficient resources
		{wrap(api(10047)), true}, // insufficient storage
		{wrap(api(10118)), true}, // stream offline
		{fmt.Errorf("%w: stream KB has subjects [x.>]", ErrStreamSubjects), false},
		{wrap(jetstream.ErrJetStreamNotEnabledForAccount), false},
		{wrap(api(10039)), false}, // JetStream not enabled for account, as the server says it
		{wrap(api(10052)), false}, // invalid stream config
		{wrap(api(10058)), false}, // name in use with another configuration
		{wrap(api(10065)), false}, // subjects overlap
		{wrap(jetstream.ErrStreamNameAlreadyInUse), false},
		{wrap(fmt.Errorf("%w: %q", jetstream.ErrInvalidStreamName, "a.b")), false},
		{wrap(jetstream.ErrStreamSourceNotSupported), false},
		{wrap(nats.ErrConnectionClosed), false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

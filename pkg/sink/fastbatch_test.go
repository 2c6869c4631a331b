package sink

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/kubebridge/kubebridge/internal/natstest"
)

// TestFastBatchFencing records why the publisher does not send snapshots
// as a JetStream fast batch (orbit.go's jetstreamext; issue 36 asked
// whether per-subject fencing holds with it). It does on the server: a
// message whose Nats-Expected-Last-Subject-Sequence is stale is refused.
// But the publisher hears of it only through an informational reply the
// server may drop, the batch's commit succeeds, nothing after the refused
// message is stored, and no message's stream sequence comes back, which
// the fence needs for the subject's next publish.
func TestFastBatchFencing(t *testing.T) {
	srv := natstest.Server(t, server.Options{JetStream: true})
	_, js := natstest.JetStream(t, srv.ClientURL())
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "F", Subjects: []string{"f.>"}, Storage: jetstream.MemoryStorage, AllowBatchPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"f.a", "f.b"} { // at 1 and 2
		if _, err := js.Publish(ctx, subject, nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var reported []error
	fp, err := jetstreamext.NewFastPublisher(js, jetstreamext.WithFastPublisherErrorHandler(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		subject  string
		expected uint64
	}{{"f.a", 1}, {"f.b", 1}, {"f.c", 0}} { // f.b's is stale: it is at 2
		ack, err := fp.Add(m.subject, nil, jetstreamext.WithBatchExpectLastSequencePerSubject(m.expected))
		if err != nil {
			t.Fatalf("add %s: %v", m.subject, err)
		}
		if ack.AckSequence != 0 {
			t.Errorf("add %s: a stream sequence (%d) came back", m.subject, ack.AckSequence)
		}
	}
	ack, err := fp.Commit(ctx, "f.d", nil)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if ack.BatchSize != 1 {
		t.Errorf("the commit says %d messages of the batch stored, want 1 (f.a's)", ack.BatchSize)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("f.>"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects; len(got) != 2 || got["f.a"] != 2 || got["f.b"] != 1 {
		t.Errorf("messages per subject %v, want f.a 2 and f.b 1: the stale one refused, nothing after it stored", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		errs := reported
		mu.Unlock()
		if len(errs) == 1 && strings.Contains(errs[0].Error(), "wrong last sequence") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("errors reported %v, want one wrong last sequence", errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package bridge

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// silentStream takes every publish and never acknowledges one, as
// JetStream does while its acknowledgements are lost.
type silentStream struct {
	mu   sync.Mutex
	sent []*nats.Msg
}

func (s *silentStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
	return ackedFuture{ok: make(chan *jetstream.PubAck), err: make(chan error), m: m}, nil
}

func (s *silentStream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// The byte budget counts each encoded message's size: with nothing
// acknowledged, what is in flight stays within BRIDGE_PUBLISH_BUFFER_BYTES
// although the window would take every change, and the bytes counted are
// those of the messages sent.
func TestPipelineBudgetsEncodedBytes(t *testing.T) {
	const limit, objects = 64 << 10, 200
	cfg := testConfig(t, map[string]string{"BRIDGE_PUBLISH_BUFFER_BYTES": "64Ki", "BRIDGE_PUBLISH_WINDOW": "512"})
	stream := &silentStream{}
	// Nothing is ever acknowledged: the test ends publishing hard, giving
	// up what is in flight, rather than waiting for it to drain.
	ctx, cancel := context.WithCancel(context.Background())
	pb, stop := runPublishingIn(ctx, t, cfg, stream, publishingDeps{})
	defer stop()
	defer cancel()
	data := strings.Repeat("x", 1024)
	for i := range objects {
		cm := testCM("ns", fmt.Sprintf("cm-%03d", i), "10")
		cm.Data = map[string]string{"d": data}
		pb.intake.Add(informers.Change{Verb: informers.Added, Resource: configMaps, Object: cm})
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return pb.budget.inUse() > limit/2, nil
	}); err != nil {
		t.Fatalf("after 10s: %d messages sent, %d bytes counted by the budget, want over half the budget's %d counted", stream.count(), pb.budget.inUse(), limit)
	}
	sent, used := stream.count(), pb.budget.inUse()
	t.Logf("%d of %d changes sent, %d bytes counted", sent, objects, used)
	if used > limit {
		t.Errorf("%d bytes in flight, over the budget of %d", used, limit)
	}
	if sent >= objects {
		t.Errorf("all %d changes sent unacknowledged: the budget of %d bytes did not hold them back", sent, limit)
	}
}

package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/encode"
)

// TestNATSOutageLosesNothing stops the NATS server during churn, long
// enough for the queue to overflow, and starts it again. The stream must
// end with exactly the cluster's state, without regressions, with no
// event id stored twice.
func TestNATSOutageLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("outage test takes ~10s")
	}
	n := startNATS(t)
	nc, js := connect(t, n.url())
	cluster := newFakeCluster()
	for i := range 20 {
		cluster.create(t, cluster.configMap("ns0", "pre-"+string(rune('a'+i)), map[string]string{"i": "0"}))
	}
	cfg := testConfig(t, map[string]string{
		"BRIDGE_QUEUE_SIZE": "50",
		// A small window keeps the pipeline's own buffers small, so the
		// queue overflows even when churn is slow on a loaded machine.
		"BRIDGE_PUBLISH_WINDOW":      "8",
		"BRIDGE_ENCODE_WORKERS":      "1",
		"BRIDGE_PUBLISH_ACK_TIMEOUT": "500ms",
		"BRIDGE_PUBLISH_MAX_BACKOFF": "200ms",
		"BRIDGE_STREAM_STORAGE":      "file",
	})
	startBridge(t, cfg, cluster.kube(), nc)

	churn(t, cluster, 500*time.Millisecond, 40)
	n.stop()
	churn(t, cluster, 3*time.Second, 40)
	n.start()
	churn(t, cluster, 500*time.Millisecond, 40)
	want := cluster.state(t, testSubjects)

	var state *replay.State
	var msgs []replay.Message
	waitFor(t, js, "the stream to converge to the cluster's state", 60*time.Second, func(m []replay.Message) bool {
		msgs = m
		state = replay.NewState(testSubjects)
		for _, msg := range m {
			if err := state.Apply(msg); err != nil {
				t.Fatal(err)
			}
		}
		if len(state.Objects) != len(want) {
			return false
		}
		for subj, rv := range want {
			if state.Objects[subj].ResourceVersion != rv {
				return false
			}
		}
		return true
	})
	assertState(t, state, want)
	if len(state.Regressions) > 0 {
		t.Errorf("resourceVersion regressions:\n%s", strings.Join(state.Regressions, "\n"))
	}
	ids := map[string]uint64{}
	for _, m := range msgs {
		if prev, ok := ids[m.Event.ID()]; ok {
			t.Errorf("event id %s stored twice (seq %d and %d)", m.Event.ID(), prev, m.Seq)
		}
		ids[m.Event.ID()] = m.Seq
	}
	t.Logf("%d messages, %d snapshots (start-up + after dropped changes), %d objects swept by mark-and-sweep",
		len(msgs), countType(msgs, encode.TypeSnapshotEnd), len(state.Swept))
	if countType(msgs, encode.TypeSnapshotEnd) < 2 {
		t.Errorf("the queue never overflowed (no snapshot after dropped changes); the test did not exercise recovery")
	}
}

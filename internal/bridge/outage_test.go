package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestNATSOutageLosesNothing stops the NATS server during churn, long
// enough for far more changes than the buffer holds to wait, and starts it
// again. The stream must end with exactly the cluster's state, through live
// events alone (no repair snapshot), without regressions, with no event id
// stored twice.
func TestNATSOutageLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("outage test takes ~10s")
	}
	n, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	for i := range 20 {
		cluster.create(t, cluster.configMap("ns0", "pre-"+string(rune('a'+i)), map[string]string{"i": "0"}))
	}
	cfg := testConfig(t, map[string]string{
		"BRIDGE_PUBLISH_BUFFER_BYTES": "64Ki",
		// A small window and buffer keep the pipeline's own buffers small,
		// so changes wait in the intake even when churn is slow.
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
	coalesced := 0
	for _, m := range msgs {
		if m.Ext(contract.ExtCoalesced) != "" || m.Event.Extensions()[contract.ExtCoalesced] != nil {
			coalesced++
		}
	}
	t.Logf("%d messages, %d snapshots, %d coalesced events, %d objects swept by mark-and-sweep",
		len(msgs), countType(msgs, contract.TypeSnapshotEnd), coalesced, len(state.Swept))
	// Nothing is dropped, so nothing needs repairing: the start-up snapshot
	// is the only one, and the live events alone reach the cluster's state.
	if n := countType(msgs, contract.TypeSnapshotBegin); n != 1 {
		t.Errorf("%d snapshots, want only the start-up one", n)
	}
	if coalesced == 0 {
		t.Errorf("no event was coalesced: the outage did not make changes wait, so the test exercised nothing")
	}
}

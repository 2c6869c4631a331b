package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

func TestStreamConfig(t *testing.T) {
	c := StreamConfig(testConfig(t, nil), testSubjects)
	if c.Retention != jetstream.LimitsPolicy || c.MaxMsgsPerSubject != 8 || !c.AllowMsgTTL || !c.AllowRollup || c.DenyPurge {
		t.Errorf("default stream: retention %v, max_msgs_per_subject %d, allow_msg_ttl %v, allow_rollup_hdrs %v, deny_purge %v; want limits, 8, true, true, false",
			c.Retention, c.MaxMsgsPerSubject, c.AllowMsgTTL, c.AllowRollup, c.DenyPurge)
	}
	c = StreamConfig(testConfig(t, map[string]string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1", "BRIDGE_TOMBSTONE_TTL": "0"}), testSubjects)
	if c.MaxMsgsPerSubject != -1 || c.AllowMsgTTL || c.AllowRollup {
		t.Errorf("unlimited, deletes kept: max_msgs_per_subject %d, allow_msg_ttl %v, allow_rollup_hdrs %v; want -1, false, false",
			c.MaxMsgsPerSubject, c.AllowMsgTTL, c.AllowRollup)
	}
}

// TestTombstoneHeaders runs the bridge on the stream it creates: an
// object's subject keeps its newest messages, a delete is stored as its
// subject's only message, with Nats-TTL and Nats-Rollup, and once the TTL
// ran out the subject is empty while the other objects keep theirs.
func TestTombstoneHeaders(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	cluster := newFakeCluster()
	gone := cluster.create(t, cluster.configMap("default", "gone", map[string]string{"k": "0"}))
	cluster.create(t, cluster.configMap("default", "kept", map[string]string{"k": "0"}))
	startBridge(t, testConfig(t, map[string]string{"BRIDGE_TOMBSTONE_TTL": "1s", "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "3"}), cluster.kube(), nc)
	goneSubj := testSubjects.Prefix + "." + testSubjects.Cluster + ".core.v1.configmaps.default.gone"
	keptSubj := testSubjects.Prefix + "." + testSubjects.Cluster + ".core.v1.configmaps.default.kept"

	for i := range 4 {
		gone = gone.DeepCopy()
		gone.Data["k"] = string(rune('1' + i))
		gone = cluster.update(t, gone)
		rv := gone.ResourceVersion
		waitFor(t, js, "update at rv "+rv, 10*time.Second, func(m []replay.Message) bool {
			return len(m) > 0 && m[len(m)-1].Ext(contract.ExtResourceVersion) == rv
		})
	}
	if got := subjectCount(t, js, goneSubj); got != 3 {
		t.Errorf("after its snapshot item and 4 updates, %s holds %d messages, want 3 (BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT)", goneSubj, got)
	}

	cluster.delete(t, "default", "gone")
	var del *jetstream.RawStreamMsg
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		del = lastOn(t, js, goneSubj)
		return del != nil && del.Header.Get("ce-type") == contract.TypeDeleted, nil
	}); err != nil {
		t.Fatalf("no delete on %s", goneSubj)
	}
	if got := del.Header.Get(contract.HeaderTTL); got != "1s" {
		t.Errorf("delete: Nats-TTL %q, want 1s", got)
	}
	if got := del.Header.Get(contract.HeaderRollup); got != "sub" {
		t.Errorf("delete: Nats-Rollup %q, want sub", got)
	}
	// The TTL is a second: the delete may be gone already, never more.
	if got := subjectCount(t, js, goneSubj); got > 1 {
		t.Errorf("after the delete, %s holds %d messages, want only the delete", goneSubj, got)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return lastOn(t, js, goneSubj) == nil, nil
	}); err != nil {
		t.Fatalf("the delete on %s did not expire", goneSubj)
	}
	if m := lastOn(t, js, keptSubj); m == nil || m.Header.Get("ce-type") != contract.TypeSnapshotItem {
		t.Errorf("the object that was not deleted lost its message: %v", m)
	}
}

// On an existing stream that allows neither TTLs nor roll-ups, deletes are
// published without those headers, which the stream would refuse.
func TestTombstonesOnBareStream(t *testing.T) {
	_, nc, js := startConnectedNATS(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "KUBEBRIDGE", Subjects: []string{"kubebridge.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	cluster := newFakeCluster()
	cluster.create(t, cluster.configMap("default", "gone", nil))
	cfg := testConfig(t, map[string]string{"BRIDGE_TOMBSTONE_TTL": "1s"})
	info, err := ensureStream(context.Background(), js, cfg, testSubjects, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if e := newEncoder(cfg, testSubjects, info, 0); e.TombstoneTTL != 0 || e.TombstoneRollup {
		t.Errorf("encoder for a bare stream: TombstoneTTL %v, TombstoneRollup %v; want neither", e.TombstoneTTL, e.TombstoneRollup)
	}
	startBridge(t, cfg, cluster.kube(), nc)
	cluster.delete(t, "default", "gone")
	msgs := waitFor(t, js, "the delete", 10*time.Second, func(m []replay.Message) bool { return countType(m, contract.TypeDeleted) == 1 })
	for _, m := range msgs {
		if m.Header.Get(contract.HeaderTTL) != "" || m.Header.Get(contract.HeaderRollup) != "" {
			t.Errorf("seq %d %s carries Nats-TTL %q, Nats-Rollup %q", m.Seq, m.Event.Type(), m.Header.Get(contract.HeaderTTL), m.Header.Get(contract.HeaderRollup))
		}
	}
}

func subjectCount(t *testing.T, js jetstream.JetStream, subject string) uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "KUBEBRIDGE")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// lastOn is the last message on subject, nil if there is none.
func lastOn(t *testing.T, js jetstream.JetStream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "KUBEBRIDGE")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// defaultMaxMsgsPerSubject is BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT's
// documented default.
const defaultMaxMsgsPerSubject = 8

// TestCompaction runs ten periodic snapshots of 1,000 ConfigMaps while two
// clients create, update and delete them, with the default per-subject
// limit. A stream that kept every message would hold at least eleven
// copies of every object; the created stream keeps at most N messages per
// subject, so it holds at most (N + 1) × objects + markers (the issue's
// bound; N per subject is what the test checks first). And compaction
// loses no state: the last message per subject, and a mark-and-sweep
// replay from the latest complete snapshot's begin marker, both equal the
// apiserver's list. Eleven snapshots of about 1,000 items are some 11,000
// messages against a bound of 9,016, so a stream without the limit fails
// the test; the ratio, 11 to 9, is the same for any number of objects.
func TestCompaction(t *testing.T) {
	const objects = 1000
	h := newHarness(t)
	typ := h.cmType()
	h.createManyWith(objects, func(i int) string { return churnName("churn-", i) }, 64)

	// The defaults of BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT and
	// BRIDGE_TOMBSTONE_TTL.
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "1s", "BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "", "BRIDGE_TOMBSTONE_TTL": ""}
	b := h.startBridge(vars)
	c := startChurnWith(h.cs, h.ns, churnOptions{names: objects, workers: 2, pause: 5 * time.Millisecond, seed: 17, filler: 64})
	defer c.stop()

	// Ten periodic snapshots after the start-up one, all under churn.
	var periodic float64
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 4*time.Minute, true, func(context.Context) (bool, error) {
		periodic = b.scrape().sum("kubebridge_snapshots_total", "resource", cmResource, "reason", "periodic")
		return periodic >= 10, nil
	})
	if err != nil {
		t.Fatalf("fewer than 10 periodic snapshots after 4 minutes: %v", periodic)
	}
	if errs := c.stop(); len(errs) > 0 {
		t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	t.Logf("churn: %v", c)
	acct := b.waitNoneDropped(cmResource, convergeTimeout)
	items := b.scrape().sum("kubebridge_snapshot_items_total", "resource", cmResource)

	// The last message per subject is the cluster's state.
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	h.waitLastPerSubject(typ, want)

	info := h.streamInfo()
	const markers = 2 * defaultMaxMsgsPerSubject
	bound := uint64((defaultMaxMsgsPerSubject+1)*objects + markers)
	t.Logf("stream: %d messages, %d bytes, %d subjects; %v snapshot items and %d live events published (%v); bound (N+1)×objects+markers = %d",
		info.State.Msgs, info.State.Bytes, info.State.NumSubjects, items, int(acct.observed), acct, bound)
	if info.Config.MaxMsgsPerSubject != defaultMaxMsgsPerSubject {
		t.Errorf("created stream has max_msgs_per_subject %d, want the default %d", info.Config.MaxMsgsPerSubject, defaultMaxMsgsPerSubject)
	}
	if info.State.Msgs > bound {
		t.Errorf("the stream holds %d messages after 11 snapshots of %d objects, more than (N+1)×objects+markers = %d", info.State.Msgs, objects, bound)
	}
	var over []string
	for subj, n := range h.subjectCounts() {
		if n > defaultMaxMsgsPerSubject {
			over = append(over, fmt.Sprintf("%s: %d", subj, n))
		}
	}
	if len(over) > 0 {
		t.Errorf("%d subjects hold more than %d messages, e.g. %q", len(over), defaultMaxMsgsPerSubject, over[:min(5, len(over))])
	}
	// Object subjects are the churned names, plus the two marker subjects
	// and the term subject.
	if info.State.NumSubjects > objects+3 {
		t.Errorf("%d subjects, more than %d names, 2 marker subjects and the term subject", info.State.NumSubjects, objects)
	}

	// A replay from the latest complete snapshot's begin marker.
	start, id := h.latestSnapshotStart(typ)
	msgs := h.readFrom(typ+".>", start)
	st := replay.NewState(h.subjects())
	for _, m := range msgs {
		if err := st.Apply(m); err != nil {
			t.Fatalf("replay from seq %d (snapshot %s): %v", start, id, err)
		}
	}
	if d := diffState(stateOf(st, typ), want); d != "" {
		t.Errorf("mark-and-sweep replay from the begin marker of snapshot %s (seq %d): %s", id, start, d)
	}
	checkNoRegressions(t, st)
	t.Logf("replay from seq %d: %d messages, %d objects, %d swept", start, len(msgs), len(st.Objects), len(st.Swept))
}

// ---- reading the stream as a bootstrapping consumer ----

// jsStream is the test's stream, looked up within ctx.
func (h *harness) jsStream(ctx context.Context) jetstream.Stream {
	h.t.Helper()
	s, err := h.js.Stream(ctx, h.stream)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// streamInfo is the test's stream info, with opts (a subject filter).
func (h *harness) streamInfo(opts ...jetstream.StreamInfoOpt) *jetstream.StreamInfo {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := h.jsStream(ctx).Info(ctx, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	return info
}

// subjectCounts is the number of messages per subject.
func (h *harness) subjectCounts() map[string]uint64 {
	h.t.Helper()
	return h.streamInfo(jetstream.WithSubjectFilter(h.prefix + ".>")).State.Subjects
}

// lastMsg is the last message on subject, nil if it has none.
func (h *harness) lastMsg(subject string) *jetstream.RawStreamMsg {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := h.jsStream(ctx).GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// readFrom reads every message matching filter from stream sequence start
// (0: the first), decoded with sdk-go.
func (h *harness) readFrom(filter string, start uint64) []replay.Message {
	h.t.Helper()
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if start > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	msgs, err := h.consume(cfg)
	if err != nil {
		h.t.Fatalf("read %s from seq %d: %v", filter, start, err)
	}
	return msgs
}

// lastPerSubject reads the last message of every subject matching filter,
// as a consumer bootstrapping with DeliverLastPerSubject does. It uses a
// plain pull consumer: an ordered consumer recreates itself after a gap
// from the next stream sequence, which goes on with messages that are not
// the last of their subject.
func (h *harness) lastPerSubject(filter string) ([]replay.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := h.js.CreateConsumer(ctx, h.stream, jetstream.ConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:      jetstream.AckNonePolicy,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = h.js.DeleteConsumer(context.Background(), h.stream, c.CachedInfo().Name) }()
	return drain(c, c.CachedInfo().NumPending)
}

// consume reads what an ordered consumer with cfg delivers until nothing
// is pending.
func (h *harness) consume(cfg jetstream.OrderedConsumerConfig) ([]replay.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.js.Stream(ctx, h.stream)
	if err != nil {
		return nil, err
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	return drain(c, info.NumPending)
}

// drain fetches and decodes what c delivers until nothing is pending.
func drain(c jetstream.Consumer, left uint64) ([]replay.Message, error) {
	var out []replay.Message
	for left > 0 {
		batch, err := c.Fetch(int(min(left, 1000)), jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			left = meta.NumPending
			ev, err := cenats.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if errors.Is(err, cenats.ErrNotCloudEvent) {
				continue // foreign: no event, as consumers skip it
			}
			if err != nil {
				return nil, fmt.Errorf("seq %d: %w", meta.Sequence.Stream, err)
			}
			out = append(out, replay.Message{Seq: meta.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Event: ev})
		}
		if n == 0 {
			return nil, fmt.Errorf("nothing delivered although %d are pending: %v", left, batch.Error())
		}
	}
	return out, nil
}

// lastView is the state a consumer bootstrapping from the last message per
// subject holds for type typ: every object whose last message is not a
// delete, as subject → resourceVersion. Snapshot markers, whose subjects
// match the type's wildcard too, are skipped.
func lastView(msgs []replay.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		switch m.Event.Type() {
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeSnapshotItem:
			out[m.Subject] = m.Ext(contract.ExtResourceVersion)
		case contract.TypeDeleted:
			delete(out, m.Subject)
		}
	}
	return out
}

// waitLastPerSubject waits until the last-per-subject view of type typ
// equals want.
func (h *harness) waitLastPerSubject(typ string, want map[string]string) {
	h.t.Helper()
	var d string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		msgs, err := h.lastPerSubject(typ + ".*.*")
		if err != nil {
			d = err.Error()
		} else {
			d = diffState(lastView(msgs), want)
		}
		return d == "", nil
	})
	if err != nil {
		h.t.Fatalf("the last-per-subject view of %s does not equal the apiserver's list after %v: %s", typ, convergeTimeout, d)
	}
}

// latestSnapshotStart finds where a mark-and-sweep replay of type typ
// starts, as the README tells a consumer: the last end marker (the last
// message on <type>._snapshot.end) names the latest complete snapshot; its
// begin marker is among the few the begin subject keeps.
func (h *harness) latestSnapshotStart(typ string) (uint64, string) {
	h.t.Helper()
	end := h.lastMsg(typ + "._snapshot.end")
	if end == nil {
		h.t.Fatalf("no end marker on %s._snapshot.end", typ)
	}
	id := end.Header.Get("ce-" + contract.ExtSnapshotID)
	for _, m := range h.readFrom(typ+"._snapshot.begin", 0) {
		if m.Ext(contract.ExtSnapshotID) == id {
			return m.Seq, id
		}
	}
	h.t.Fatalf("the begin marker of snapshot %s (ended at seq %d) is not in the stream", id, end.Sequence)
	return 0, ""
}

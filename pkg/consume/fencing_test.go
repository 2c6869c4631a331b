package consume_test

import (
	"context"
	"testing"
	"time"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestSecondBridgeFencesTheFirst runs a second bridge next to a first one
// under churn, as a misconfigured Deployment would: the second's term
// fences the first, which stops. What the first still stored after the
// second's term began is ignored by the term rule, the same messages as
// the reference consumer (internal/replay) ignores; and every state holds
// the apiserver's list.
func TestSecondBridgeFencesTheFirst(t *testing.T) {
	h := newHarness(t)
	h.ensureWidgetCRD()
	h.createConfigMaps(0, 100)
	resources := "configmaps; widgets.example.com"
	// Every message stays, for the comparison with the reference consumer.
	history := map[string]string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1", "BRIDGE_TOMBSTONE_TTL": "0"}
	first := h.launchBridge(resources, history)
	live := h.startState(consume.LastPerSubject, nil)
	done := make(chan error, 1)
	go func() { done <- h.churn(100, 2000, 4) }()
	h.launchBridge(resources, history)
	if err := first.Wait(time.Minute); err == nil {
		t.Error("the first bridge ended without an error after a newer term began")
	} else {
		t.Logf("the first bridge: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	states := map[string]*consume.State{"live": live}
	for _, mode := range modes {
		states[mode.String()] = h.startState(mode, nil)
	}
	h.converge(states)

	// The reference consumer over the whole stream.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := replay.ReadAll(ctx, h.js, h.stream, "")
	if err != nil {
		t.Fatal(err)
	}
	ref := replay.NewState(contract.Subjects{Prefix: h.prefix, Cluster: cluster})
	var terms int
	for _, m := range msgs {
		if err := ref.Apply(m); err != nil {
			t.Fatalf("replay: seq %d: %v", m.Seq, err)
		}
		if m.Event.Type() == contract.TypeTerm {
			terms++
		}
	}
	var fenced int
	for _, err := range h.client().Events(ctx, h.filters(), consume.UntilCaughtUp(), consume.OnFenced(func(*consume.Event) { fenced++ })) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if terms != 2 || fenced != len(ref.Fenced) {
		t.Errorf("%d terms; Events skipped %d events as fenced, the reference consumer %d: %q", terms, fenced, len(ref.Fenced), ref.Fenced)
	}
	// The live state bootstrapped before the second term began, and saw
	// every message since.
	if got := live.Stats().Fenced; got != uint64(len(ref.Fenced)) {
		t.Errorf("the live state ignored %d events as fenced, the reference consumer %d", got, len(ref.Fenced))
	}
	t.Logf("%d messages; %d written by the first bridge after the second's term began; live state %+v", len(msgs), fenced, live.Stats())
}

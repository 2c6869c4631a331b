package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestAliasedTypes watches HorizontalPodAutoscalers as two types,
// autoscaling/v1 and autoscaling/v2: one object, served at two versions.
// 20 creates, 10 updates and 5 deletes must reach the stream once on each
// type, with ids that name the type, so that JetStream never drops one
// type's event as a duplicate of the other's (the id used to be
// <uid>/<rv>/<verb>, the same under both versions).
func TestAliasedTypes(t *testing.T) {
	const creates, updates, deletes = 20, 10, 5
	h := newHarness(t)
	b := h.startBridge(map[string]string{"BRIDGE_RESOURCES": "horizontalpodautoscalers.v1.autoscaling; horizontalpodautoscalers.v2.autoscaling"})
	types := map[string]string{ // type subject → resource (ids, metrics)
		h.typeSubject("autoscaling", "v1", "horizontalpodautoscalers"): "horizontalpodautoscalers.v1.autoscaling",
		h.typeSubject("autoscaling", "v2", "horizontalpodautoscalers"): "horizontalpodautoscalers.v2.autoscaling",
	}
	if n := b.countLog(`"Watching"`); n != 2 {
		t.Errorf("the bridge logged %d \"Watching\" lines, want 2 (one informer per version)", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hpas := h.cs.AutoscalingV2().HorizontalPodAutoscalers(h.ns)
	uids := map[string]string{} // name → uid
	for i := range creates {
		name := fmt.Sprintf("hpa-%02d", i)
		// The target need not exist: no controller runs.
		hpa, err := hpas.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    new(int32(1)),
				MaxReplicas:    3,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		uids[name] = string(hpa.UID)
	}
	// The updates and deletes wait until every create is published on
	// both types, so no create can merge with a later change: each type
	// must then show 20 added events of its own.
	countsOf := func(msgs []replay.Message) string {
		var missing []string
		for typ := range types {
			if c := streamChanges(msgs, typ); c[contract.TypeAdded] < creates {
				missing = append(missing, fmt.Sprintf("%s: %s", typ, fmtCounts(c)))
			}
		}
		return strings.Join(missing, "; ")
	}
	if msgs, missing := h.pollStream(30*time.Second, countsOf); missing != "" {
		defer logOnFailure(t, msgs)
		t.Fatalf("the creates did not all reach both types: %s; kubebridge_publish_duplicates_total = %v",
			missing, b.scrape().sum("kubebridge_publish_duplicates_total"))
	}

	// hpa-00..09 are updated, hpa-05..09 then deleted: an update and the
	// delete after it may merge into one deleted event (coalesced=2).
	for i := range updates {
		name := fmt.Sprintf("hpa-%02d", i)
		cur, err := hpas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.MaxReplicas = 5
		if _, err := hpas.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
	}
	for i := updates - deletes; i < updates; i++ {
		if err := hpas.Delete(ctx, fmt.Sprintf("hpa-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete hpa-%02d: %v", i, err)
		}
	}

	// changes each object went through, by name
	want := map[string]int{}
	for i := range creates {
		n := 1
		if i < updates {
			n++
		}
		if i >= updates-deletes && i < updates {
			n++
		}
		want[fmt.Sprintf("hpa-%02d", i)] = n
	}
	total := creates + updates + deletes
	msgs, missing := h.pollStream(30*time.Second, func(msgs []replay.Message) string {
		var missing []string
		for typ := range types {
			if c := streamChanges(msgs, typ); c[contract.TypeAdded]+c[contract.TypeUpdated]+c[contract.TypeDeleted] < total {
				missing = append(missing, fmt.Sprintf("%s: %s", typ, fmtCounts(c)))
			}
		}
		return strings.Join(missing, "; ")
	})
	defer logOnFailure(t, msgs)
	dups := b.scrape().sum("kubebridge_publish_duplicates_total")
	if missing != "" {
		t.Fatalf("not every change reached both types: %s; kubebridge_publish_duplicates_total = %v", missing, dups)
	}
	if dups != 0 {
		t.Errorf("kubebridge_publish_duplicates_total = %v, want 0: events of one type were taken for duplicates", dups)
	}
	checkUniqueIDs(t, msgs)
	st := h.applyAll(t, msgs)
	checkNoRegressions(t, st)

	list, err := h.cs.AutoscalingV1().HorizontalPodAutoscalers(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for typ, resource := range types {
		version := strings.TrimPrefix(strings.TrimSuffix(resource, ".autoscaling"), "horizontalpodautoscalers.")
		c := streamChanges(msgs, typ)
		t.Logf("%s: %s (counting the changes coalesced events stand for)", typ, fmtCounts(c))
		if st.Changes[typ] != total {
			t.Errorf("%s: the events stand for %d changes, want %d", typ, st.Changes[typ], total)
		}
		wantState := map[string]string{}
		for _, hpa := range list.Items {
			wantState[typ+"."+h.ns+"."+hpa.Name] = hpa.ResourceVersion
		}
		if d := diffState(stateOf(st, typ), wantState); d != "" {
			t.Errorf("%s: the replayed state differs from the apiserver's list: %s", typ, d)
		}
		for name, n := range want {
			evs := onSubject(msgs, typ+"."+h.ns+"."+name)
			got := 0
			for _, m := range evs {
				switch m.Event.Type() {
				case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
					k, _ := m.Coalesced()
					got += k
				}
				if !strings.HasPrefix(m.Event.ID(), resource+"/"+uids[name]+"/") {
					t.Errorf("%s seq %d: id %s, want %s/%s/<rv>/<verb>", typ, m.Seq, m.Event.ID(), resource, uids[name])
				}
				checkEq(t, fmt.Sprintf("%s seq %d apiversion", typ, m.Seq), m.Ext(contract.ExtAPIVersion), "autoscaling/"+version)
			}
			if got != n {
				t.Errorf("%s %s: events stand for %d changes, want %d:\n%s", typ, name, got, n, describe(evs))
			}
			if len(evs) > 0 && evs[0].Event.Type() != contract.TypeAdded {
				t.Errorf("%s %s: first event is %s, want added", typ, name, evs[0].Event.Type())
			}
		}
	}
}

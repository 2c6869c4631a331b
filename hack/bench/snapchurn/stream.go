package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

type streamResult struct {
	messages     int
	begins       int
	firstItems   int
	live         int // added, updated, deleted events
	coalesced    int // of them with coalesced ≥ 2
	duplicateIDs int
	state        *replay.State
	diff         string
}

func readStream(ctx context.Context, js jetstream.JetStream) (streamResult, error) {
	r := streamResult{state: replay.NewState(contract.Subjects{Prefix: prefix, Cluster: cluster}), firstItems: -1}
	ids := map[string]struct{}{}
	firstSnapshot := ""
	items := 0
	start := time.Now()
	err := replay.ForEach(ctx, js, stream, "", func(m replay.Message) error {
		r.messages++
		if _, dup := ids[m.Event.ID()]; dup {
			r.duplicateIDs++
		}
		ids[m.Event.ID()] = struct{}{}
		switch m.Event.Type() {
		case contract.TypeSnapshotBegin:
			r.begins++
			if firstSnapshot == "" {
				firstSnapshot = m.Ext(contract.ExtSnapshotID)
			}
		case contract.TypeSnapshotItem:
			if m.Ext(contract.ExtSnapshotID) == firstSnapshot {
				items++
			}
		case contract.TypeSnapshotEnd:
			if m.Ext(contract.ExtSnapshotID) == firstSnapshot {
				r.firstItems = items
			}
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
			r.live++
			if n, _ := m.Coalesced(); n > 1 {
				r.coalesced++
			}
		}
		if err := r.state.Apply(m); err != nil {
			return fmt.Errorf("replay: seq %d: %w", m.Seq, err)
		}
		if r.messages%50000 == 0 {
			logf("read %d messages", r.messages)
		}
		return nil
	})
	logf("read %d messages in %v", r.messages, time.Since(start).Round(time.Millisecond))
	return r, err
}

// list is the apiserver's ConfigMaps as subject → resourceVersion.
func list(ctx context.Context, cs kubernetes.Interface) (map[string]string, error) {
	out := map[string]string{}
	opts := metav1.ListOptions{Limit: 1000}
	for {
		l, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, cm := range l.Items {
			out[prefix+"."+cluster+".core.v1.configmaps."+namespace+"."+cm.Name] = cm.ResourceVersion
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// diff describes how the replayed state differs from the list ("" if
// equal).
func diff(st *replay.State, want map[string]string) string {
	missing, stale, extra := 0, 0, 0
	for subj, rv := range want {
		o, ok := st.Objects[subj]
		switch {
		case !ok:
			missing++
		case o.ResourceVersion != rv:
			stale++
		}
	}
	for subj := range st.Objects {
		if _, ok := want[subj]; !ok {
			extra++
		}
	}
	if missing+stale+extra == 0 {
		return ""
	}
	return fmt.Sprintf("%d missing, %d at another rv, %d extra", missing, stale, extra)
}

func printRow(o options, ch *churn, churnTime time.Duration, m metrics, r streamResult) {
	observed := m.sum("kubebridge_changes_observed_total", "resource", resource)
	var published float64
	for _, t := range []string{"added", "updated", "deleted"} {
		published += m.sum("kubebridge_events_published_total", "resource", resource, "type", t)
	}
	coalesced := m.sum("kubebridge_changes_coalesced_total", "resource", resource)
	superseded := m.sum("kubebridge_events_superseded_total", "resource", resource)
	var dropped string
	if len(m["kubebridge_queue_capacity"]) > 0 {
		// The bounded queue's binary counts what it drops.
		dropped = fmt.Sprintf("%.0f (%.0f %%, changes_dropped_total)", m.sum("kubebridge_changes_dropped_total", "resource", resource),
			100*m.sum("kubebridge_changes_dropped_total", "resource", resource)/max(observed, 1))
	} else {
		d := observed - published - coalesced - superseded
		dropped = fmt.Sprintf("%.0f (%.0f %%)", d, 100*d/max(observed, 1))
	}
	extra := max(r.begins-1, 0)
	base := r.firstItems + int(observed)
	ratio := "–"
	if base > 0 {
		ratio = fmt.Sprintf("%.3f", float64(r.messages)/float64(base))
	}
	equal := "yes"
	if r.diff != "" {
		equal = "no: " + r.diff
	}
	fmt.Println()
	fmt.Println("| bridge | objects | churn (c/u/d at req/s) | changes observed | dropped | extra snapshots | stream messages | items + changes | messages / (items + changes) | coalesced events | regressions | duplicate ids | replay = list |")
	fmt.Println("|---|--:|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|")
	fmt.Printf("| %s | %d | %d/%d/%d at %.0f (asked %.0f) | %.0f | %s | %d | %d | %d + %.0f | %s | %d | %d | %d | %s |\n",
		o.label, o.objects, ch.creates.Load(), ch.updates.Load(), ch.deletes.Load(), float64(ch.done.Load())/churnTime.Seconds(), o.rate,
		observed, dropped, extra, r.messages, r.firstItems, observed, ratio, r.coalesced, len(r.state.Regressions), r.duplicateIDs, equal)
	fmt.Println()
	fmt.Printf("published added+updated+deleted %.0f, coalesced %.0f, superseded %.0f; %d live events in the stream; snapshots_total %.0f; bridge env %q\n",
		published, coalesced, superseded, r.live, m.sum("kubebridge_snapshots_total", "resource", resource), []string(o.env))
}

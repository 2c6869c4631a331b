package consume_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// wrongKeys are the keys of the uids whose NATS states are not a
// subsequence of the apiserver's: what a failing side-by-side run dumps.
func wrongKeys(api, nats *callLog) map[string]types.UID {
	a, n := api.snapshot(), nats.snapshot()
	out := map[string]types.UID{}
	for uid := range uidsOf(a, n) {
		if !isSubsequence(states(n[uid], nil), states(a[uid], nil)) && len(n[uid]) > 0 {
			out[n[uid][0].key] = uid
		}
	}
	return out
}

// dumpHistory logs what the stream holds of the object at key (every
// message on its subject) and of its type's snapshot markers, one line
// each: the history a failing run is read against.
func (h *harness) dumpHistory(key string) {
	h.t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	typ := fmt.Sprintf("%s.%s.core.v1.configmaps", h.prefix, cluster)
	subject := typ + "." + contract.EscapeToken(ns) + "." + contract.EscapeToken(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.js.OrderedConsumer(ctx, h.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject, typ + "." + contract.SnapshotToken + ".*", fmt.Sprintf("%s.%s._term", h.prefix, cluster)},
		DeliverPolicy:  jetstream.DeliverAllPolicy, HeadersOnly: true,
	})
	if err != nil {
		h.t.Logf("dump %s: %v", key, err)
		return
	}
	var lines []string
	for {
		m, err := c.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			break
		}
		meta, err := m.Metadata()
		if err != nil {
			break
		}
		hd := m.Headers()
		lines = append(lines, fmt.Sprintf("%d %s uid=%s rv=%s snap=%s term=%s", meta.Sequence.Stream,
			strings.TrimPrefix(hd.Get("ce-type"), "io.kubebridge."), hd.Get("ce-uid"), hd.Get("ce-resourceversion"), hd.Get("ce-snapshotid"), hd.Get("ce-term")))
	}
	h.t.Logf("stream history of %s (its subject, the snapshot markers, the terms):\n  %s", key, strings.Join(lines, "\n  "))
}

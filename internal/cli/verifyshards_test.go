package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// TestVerifyShardedStream: two shards whose snapshots interleave in the
// stream, each with its own terms (shard 0's term is the lower), and a
// late change of shard 0's deposed leader; verify follows each shard's
// framing and terms, ignores the late change as fenced, finds nothing,
// and holds each shard's objects.
func TestVerifyShardedStream(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{Name: h.stream, Subjects: []string{h.prefix + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	res := &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	encs := map[int]*encode.Encoder{}
	for i := range 2 {
		encs[i] = &encode.Encoder{Subjects: contract.Subjects{Prefix: h.prefix, Cluster: cluster, Shard: contract.Shard{Index: i, Count: 2}}}
	}
	publish := func(i int, c informers.Change) {
		t.Helper()
		c.Resource, c.ObservedAt = res, time.Now()
		e, err := encs[i].EncodeWithin(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.js.PublishMsg(ctx, e.Msg); err != nil {
			t.Fatal(err)
		}
	}
	term := func(i int) {
		t.Helper()
		m, err := encs[i].TermMarker(contract.TermData{Holder: "shard"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ack, err := h.js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		encs[i].Term = ack.Sequence
	}
	cm := func(ns, name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), ResourceVersion: rv}}
	}
	term(0)
	term(1)
	// Shard 0's next term; its deposed leader stores one more change,
	// which consumers ignore.
	deposed := encs[0].Term
	term(0)
	current := encs[0].Term
	encs[0].Term = deposed
	publish(0, informers.Change{Verb: informers.Added, Object: cm("a", "late", "9")})
	encs[0].Term = current
	publish(0, informers.Change{Verb: informers.Added, Object: cm("a", "x", "10")})
	publish(1, informers.Change{Verb: informers.Added, Object: cm("b", "x", "11")})
	publish(0, informers.Change{Verb: informers.SnapshotBegin, SnapshotID: "s0"})
	publish(1, informers.Change{Verb: informers.SnapshotBegin, SnapshotID: "s1"})
	publish(0, informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s0", Object: cm("a", "x", "10")})
	publish(1, informers.Change{Verb: informers.SnapshotItem, SnapshotID: "s1", Object: cm("b", "x", "11")})
	publish(0, informers.Change{Verb: informers.SnapshotEnd, SnapshotID: "s0", SnapshotCount: 1})
	publish(0, informers.Change{Verb: informers.Updated, Object: cm("a", "x", "12"), OldObject: cm("a", "x", "10")})
	publish(1, informers.Change{Verb: informers.SnapshotEnd, SnapshotID: "s1", SnapshotCount: 1})

	r := h.verify(0, "--prefix", h.prefix, "--cluster", cluster, "configmaps")
	if len(r.Findings) != 0 || len(r.Types) != 1 || r.Types[0].Objects != 2 || r.Types[0].Snapshots != 2 {
		t.Fatalf("verify of a sharded stream: findings %s, types %+v; want none, 2 objects and 2 snapshots", r.findings(), r.Types)
	}
	// The late change is ignored for its term, known from shard 0's
	// markers read before the type's first event, not swept later by
	// shard 0's snapshot (which would leave the same objects).
	if tr := r.Types[0]; tr.Fenced != 1 || tr.Swept != 0 {
		t.Errorf("fenced %d and swept %d, want 1 and 0: shard 0's terms were not those of its markers", tr.Fenced, tr.Swept)
	}
}

package bridge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// recordingStream acknowledges every publish at once, except those on
// rejectSubject, which fail as too large; it records what it stored.
type recordingStream struct {
	mu            sync.Mutex
	stored        []*nats.Msg
	rejectSubject string
}

type ackedFuture struct {
	ok  chan *jetstream.PubAck
	err chan error
	m   *nats.Msg
}

func (f ackedFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f ackedFuture) Err() <-chan error            { return f.err }
func (f ackedFuture) Msg() *nats.Msg               { return f.m }

func (r *recordingStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if m.Subject == r.rejectSubject {
		return nil, nats.ErrMaxPayload
	}
	r.mu.Lock()
	r.stored = append(r.stored, m)
	r.mu.Unlock()
	f := ackedFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), m: m}
	f.ok <- &jetstream.PubAck{Stream: "S"}
	return f, nil
}

// The end marker counts the items that were stored: not those the order
// guard dropped, nor those JetStream rejected. A rejection marks the type
// for another snapshot.
func TestSnapshotEndCountsStoredItems(t *testing.T) {
	cfg := testConfig(t, nil)
	sh := newShared(cfg.QueueSize, metrics.New())
	var rejected []*informers.Resource
	var mu sync.Mutex
	sh.rejected = func(r *informers.Resource) { mu.Lock(); rejected = append(rejected, r); mu.Unlock() }
	stream := &recordingStream{rejectSubject: testSubjects.Object(configMaps, "ns", "big")}
	soft, stop := context.WithCancel(context.Background())
	hard, cancelHard := context.WithCancel(context.Background())
	defer cancelHard()
	var wg sync.WaitGroup
	if _, _, err := startPublishing(soft, hard, &wg, cfg, stream, &encode.Encoder{Subjects: testSubjects}, sh); err != nil {
		t.Fatal(err)
	}
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
	}
	ended := sh.markers.expect("s1")
	for _, c := range []informers.Change{
		{Verb: informers.Added, Object: cm("a", "20")},
		{Verb: informers.SnapshotBegin, SnapshotID: "s1"},
		{Verb: informers.SnapshotItem, Object: cm("a", "10"), SnapshotID: "s1"},   // overtaken: dropped
		{Verb: informers.SnapshotItem, Object: cm("big", "11"), SnapshotID: "s1"}, // rejected
		{Verb: informers.SnapshotItem, Object: cm("b", "12"), SnapshotID: "s1"},
		{Verb: informers.SnapshotEnd, SnapshotID: "s1", SnapshotCount: 3},
	} {
		c.Resource = configMaps
		c.ObservedAt = time.Unix(0, 0)
		if err := sh.queue.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("end marker not stored")
	}
	stop()
	wg.Wait()
	last := stream.stored[len(stream.stored)-1]
	if got := last.Header.Get("ce-type"); got != encode.TypeSnapshotEnd {
		t.Fatalf("last stored %s", got)
	}
	if got := last.Header.Get("ce-snapshotcount"); got != "1" {
		t.Errorf("snapshotcount %s, want 1: one item stored of three listed", got)
	}
	if len(rejected) != 1 || rejected[0] != configMaps {
		t.Errorf("rejected hook got %v, want configmaps once", rejected)
	}
}

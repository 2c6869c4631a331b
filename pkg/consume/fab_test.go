package consume

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/internal/natstest"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// Fabricated streams: messages made by pkg/encode, the bridge's own
// encoder, stored either in memory (fast unit tests of the Applier) or in
// a real JetStream.

var (
	testSubjects = contract.Subjects{Prefix: "kb", Cluster: "c1"}
	cmResource   = &informers.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true}
	widgets      = &informers.Resource{GVR: schemaGVR("example.com", "v1", "widgets"), Kind: "Widget", Namespaced: true}
)

// store keeps a message and returns its stream sequence.
type store interface {
	store(t *testing.T, m *nats.Msg) uint64
}

// fab writes a kubebridge stream.
type fab struct {
	t   *testing.T
	enc *encode.Encoder
	// maxPayload, when set, makes larger events truncated (0: no limit).
	maxPayload int
	to         store
	clock      time.Time
	// seqs of everything stored, in order, and their messages.
	seqs []uint64
	msgs []*nats.Msg
	// shards holds the encoder of each shard inShard wrote as, with its
	// own term.
	shards map[contract.Shard]*encode.Encoder
}

func newFab(t *testing.T, to store) *fab {
	return &fab{t: t, to: to, clock: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		enc: &encode.Encoder{Subjects: testSubjects, TombstoneTTL: 24 * time.Hour, TombstoneRollup: true}}
}

func (f *fab) put(m *nats.Msg) uint64 {
	f.t.Helper()
	seq := f.to.store(f.t, m)
	f.seqs = append(f.seqs, seq)
	f.msgs = append(f.msgs, m)
	return seq
}

func (f *fab) now() time.Time { f.clock = f.clock.Add(time.Second); return f.clock }

// cm is a ConfigMap as an informer cache holds it (no TypeMeta).
func cm(ns, name, uid, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: rv}, Data: map[string]string{"rv": rv}}
}

// change stores one object event of configmaps.
func (f *fab) change(v informers.Verb, obj, old runtime.Object, mod ...func(*informers.Change)) uint64 {
	f.t.Helper()
	return f.changeOf(cmResource, v, obj, old, mod...)
}

func (f *fab) changeOf(r *informers.Resource, v informers.Verb, obj, old runtime.Object, mod ...func(*informers.Change)) uint64 {
	f.t.Helper()
	c := informers.Change{Verb: v, Resource: r, Object: obj, OldObject: old, ObservedAt: f.now()}
	for _, m := range mod {
		m(&c)
	}
	e, err := f.enc.EncodeWithin(c, f.maxPayload)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.put(e.Msg)
}

func (f *fab) added(o *corev1.ConfigMap) uint64 { return f.change(informers.Added, o, nil) }
func (f *fab) updated(o, old *corev1.ConfigMap) uint64 {
	return f.change(informers.Updated, o, old)
}
func (f *fab) deleted(o *corev1.ConfigMap) uint64 { return f.change(informers.Deleted, o, nil) }
func (f *fab) item(id string, o *corev1.ConfigMap) uint64 {
	return f.change(informers.SnapshotItem, o, nil, func(c *informers.Change) { c.SnapshotID = id })
}

func (f *fab) begin(id string) uint64 {
	f.t.Helper()
	return f.change(informers.SnapshotBegin, nil, nil, func(c *informers.Change) { c.SnapshotID = id })
}

// end stores an end marker; unpublished are cache keys.
func (f *fab) end(id string, count int, unpublished ...string) uint64 {
	f.t.Helper()
	return f.change(informers.SnapshotEnd, nil, nil, func(c *informers.Change) {
		c.SnapshotID, c.SnapshotCount, c.SnapshotUnpublished = id, count, unpublished
	})
}

// term stores a term marker; later events carry its sequence.
func (f *fab) term(holder string) uint64 {
	f.t.Helper()
	m, err := f.enc.TermMarker(contract.TermData{Holder: holder}, f.now())
	if err != nil {
		f.t.Fatal(err)
	}
	seq := f.put(m)
	f.enc.Term = seq
	return seq
}

// inTerm runs fn with events carrying term (a deposed leader writing late).
func (f *fab) inTerm(term uint64, fn func()) {
	prev := f.enc.Term
	f.enc.Term = term
	defer func() { f.enc.Term = prev }()
	fn()
}

// inShard runs fn writing as the bridge of shard sh: its events carry the
// shard, its markers and term markers go to the shard's subjects, and its
// term is its own.
func (f *fab) inShard(sh contract.Shard, fn func()) {
	if f.shards == nil {
		f.shards = map[contract.Shard]*encode.Encoder{}
	}
	enc := f.shards[sh]
	if enc == nil {
		enc = &encode.Encoder{Subjects: testSubjects.OfShard(sh), TombstoneTTL: f.enc.TombstoneTTL, TombstoneRollup: f.enc.TombstoneRollup}
		f.shards[sh] = enc
	}
	prev := f.enc
	f.enc = enc
	defer func() { f.enc = prev }()
	fn()
}

// memStore numbers messages from 1.
type memStore struct{ n uint64 }

func (s *memStore) store(_ *testing.T, _ *nats.Msg) uint64 { s.n++; return s.n }

// applyAll feeds what f stored to a.
func applyAll(t *testing.T, a *Applier, f *fab) {
	t.Helper()
	for i, m := range f.msgs {
		if err := a.ApplyMsg(f.seqs[i], m); err != nil {
			t.Fatalf("seq %d: %v", f.seqs[i], err)
		}
	}
}

// jsStore is a stream in an in-process nats-server with JetStream,
// configured as the bridge creates it.
type jsStore struct {
	js     jetstream.JetStream
	stream string
}

func (s *jsStore) store(t *testing.T, m *nats.Msg) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatalf("publish %s: %v", m.Subject, err)
	}
	if ack.Duplicate {
		t.Fatalf("publish %s: dropped as a duplicate", m.Subject)
	}
	return ack.Sequence
}

// startJetStream starts an in-process server and creates a stream as the
// bridge does (per-subject limit 8, tombstone TTLs and roll-ups).
func startJetStream(t testing.TB) (*nats.Conn, jetstream.JetStream, *jsStore) {
	t.Helper()
	srv := natstest.Server(t, server.Options{JetStream: true})
	nc, js := natstest.JetStream(t, srv.ClientURL())
	createTestStream(t, js)
	return nc, js, &jsStore{js: js, stream: "KB"}
}

// createTestStream creates the tests' stream KB in memory.
func createTestStream(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KB", Subjects: []string{testSubjects.Stream()}, Storage: jetstream.MemoryStorage,
		MaxMsgsPerSubject: 8, Duplicates: 2 * time.Minute, AllowMsgTTL: true, AllowRollup: true})
	if err != nil {
		t.Fatal(err)
	}
}

func testClient(t testing.TB, js jetstream.JetStream, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithStream("KB"), WithSubjectPrefix(testSubjects.Prefix), WithCluster(testSubjects.Cluster)}, opts...)
	c, err := New(js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memClient is a Client for Applier tests that never reach a server.
func memClient(t *testing.T) *Client {
	t.Helper()
	return testClient(t, fakeJS{})
}

type fakeJS struct{ jetstream.JetStream }

// recorder is a handler that logs its calls.
type recorder struct{ calls []string }

func (r *recorder) OnAdd(obj any, initial bool) {
	r.calls = append(r.calls, fmt.Sprintf("add %s initial=%v", describe(obj), initial))
}
func (r *recorder) OnUpdate(old, obj any) {
	r.calls = append(r.calls, fmt.Sprintf("update %s -> %s", describe(old), describe(obj)))
}
func (r *recorder) OnDelete(obj any) { r.calls = append(r.calls, "delete "+describe(obj)) }

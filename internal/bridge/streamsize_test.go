package bridge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// BenchmarkStreamBytesAfterResyncs measures what 24 resyncs leave in the
// stream: 2,000 ConfigMaps of about 1 KiB, a start-up snapshot and 24
// periodic ones, and between two snapshots the churn of an hour in a busy
// namespace (10% of the objects updated, 1% deleted and as many created
// under new names). Every
// event is encoded by the bridge's encoder for the stream the bridge
// creates (streamConfig, newEncoder) and published by its publisher to an
// in-process nats-server with file storage, once per setting, in the same
// run:
//
//   - old: no per-subject limit and deletes that never expire (the
//     defaults before BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT and
//     BRIDGE_TOMBSTONE_TTL; the week of BRIDGE_STREAM_MAX_AGE removes
//     nothing within 24 hours);
//   - new: the defaults (8 per subject, deletes with a TTL of 24h and a
//     roll-up);
//   - n1: one message per subject, for comparison.
//
// It reports the stream's bytes and messages per setting and old/new.
// Run it once: go test -run '^$' -bench StreamBytesAfterResyncs -benchtime 1x ./internal/bridge
func BenchmarkStreamBytesAfterResyncs(b *testing.B) {
	const objects, resyncs = 2000, 24
	settings := []struct {
		name string
		env  map[string]string
	}{
		{"old", map[string]string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1", "BRIDGE_TOMBSTONE_TTL": "0"}},
		{"new", nil},
		{"n1", map[string]string{"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "1"}},
	}
	for range b.N {
		bytes := map[string]uint64{}
		for _, s := range settings {
			info, published := fillStream(b, s.env, objects, resyncs)
			bytes[s.name] = info.State.Bytes
			b.ReportMetric(float64(info.State.Bytes)/(1<<20), s.name+"-MiB")
			b.ReportMetric(float64(info.State.Msgs), s.name+"-msgs")
			b.Logf("%s: max_msgs_per_subject %d: %d messages published, %d kept, %d bytes (%.1f MiB), %d subjects",
				s.name, info.Config.MaxMsgsPerSubject, published, info.State.Msgs, info.State.Bytes, float64(info.State.Bytes)/(1<<20), info.State.NumSubjects)
		}
		b.ReportMetric(float64(bytes["old"])/float64(bytes["new"]), "old/new")
	}
}

// fillStream publishes resyncs+1 snapshots of objects ConfigMaps, with
// churn between them, to a new server and returns the stream's info and
// the number of messages published.
func fillStream(b *testing.B, env map[string]string, objects, resyncs int) (*jetstream.StreamInfo, int) {
	ctx := context.Background()
	n, nc, js := startConnectedNATS(b)
	defer n.stop()
	defer nc.Close()
	vars := map[string]string{"BRIDGE_STREAM_STORAGE": "file"}
	for k, v := range env {
		vars[k] = v
	}
	cfg := testConfig(b, vars)
	info, err := ensureStream(ctx, js, cfg, testSubjects, func(error) {})
	if err != nil {
		b.Fatal(err)
	}
	enc := newEncoder(cfg, testSubjects, info, 0)
	pub, err := sink.NewPublisher(js)
	if err != nil {
		b.Fatal(err)
	}
	in := make(chan sink.Envelope, 1024)
	done := make(chan error, 1)
	go func() { done <- pub.Run(ctx, in) }()
	published := 0
	send := func(c informers.Change) {
		c.Resource, c.ObservedAt = sizeResource, time.Unix(0, 0)
		e, err := enc.EncodeWithin(c, 0)
		if err != nil {
			b.Fatal(err)
		}
		in <- sink.Envelope{Msg: e.Msg}
		published++
	}

	rng := rand.New(rand.NewPCG(24, 1))
	rv := 0
	nextRV := func() string { rv++; return fmt.Sprint(rv) }
	live := make([]*corev1.ConfigMap, objects)
	for i := range live {
		live[i] = sizeConfigMap(i, 0, nextRV())
	}
	gen := make([]int, objects)
	for r := range resyncs + 1 {
		if r > 0 {
			// An hour of churn.
			for range objects / 10 {
				i := rng.IntN(objects)
				old := live[i]
				cm := old.DeepCopy()
				cm.ResourceVersion = nextRV()
				cm.Data["revision"] = cm.ResourceVersion
				live[i] = cm
				send(informers.Change{Verb: informers.Updated, Object: cm, OldObject: old})
			}
			for range objects / 100 {
				i := rng.IntN(objects)
				send(informers.Change{Verb: informers.Deleted, Object: live[i]})
				gen[i]++
				live[i] = sizeConfigMap(i, gen[i], nextRV())
				send(informers.Change{Verb: informers.Added, Object: live[i]})
			}
		}
		id := fmt.Sprintf("snap-%02d", r)
		send(informers.Change{Verb: informers.SnapshotBegin, SnapshotID: id})
		for _, cm := range live {
			send(informers.Change{Verb: informers.SnapshotItem, Object: cm, SnapshotID: id})
		}
		send(informers.Change{Verb: informers.SnapshotEnd, SnapshotID: id, SnapshotCount: objects})
	}
	close(in)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	s, err := js.Stream(ctx, cfg.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil {
		b.Fatal(err)
	}
	return info, published
}

var sizeResource = &informers.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

// sizeConfigMap is the gen-th object in slot i: about 1 KiB of data,
// labels and an annotation, as an application's configuration might be.
// An object deleted is replaced by one of another name, so the deleted
// names' subjects hold their deletes.
func sizeConfigMap(i, gen int, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%d", i%20), Name: fmt.Sprintf("cm-%05d-%d", i, gen),
			UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", i, gen)), ResourceVersion: rv,
			CreationTimestamp: metav1.Unix(1767225600, 0),
			Labels:            map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%50), "app.kubernetes.io/part-of": "shop"},
			Annotations:       map[string]string{"config.example.com/checksum": strings.Repeat("ab12", 16)},
		},
		Data: map[string]string{"application.yaml": strings.Repeat("key: value # some setting\n", 40), "revision": rv},
	}
}

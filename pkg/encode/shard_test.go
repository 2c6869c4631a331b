package encode_test

import (
	"testing"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// A shard's bridge names its shard on every event, marker and term marker,
// and writes its markers and term marker to its shard's subjects; an
// unsharded one (and shard 0/1) writes neither.
func TestShardedEncoderNamesItsShard(t *testing.T) {
	changes := []informers.Change{
		{Verb: informers.Added, Resource: configMaps, Object: appConfig("1"), ObservedAt: observedAt},
		{Verb: informers.SnapshotItem, Resource: configMaps, Object: appConfig("1"), SnapshotID: "s", ObservedAt: observedAt},
		{Verb: informers.SnapshotBegin, Resource: configMaps, SnapshotID: "s", ObservedAt: observedAt},
		{Verb: informers.SnapshotEnd, Resource: configMaps, SnapshotID: "s", ObservedAt: observedAt},
	}
	base := contract.Subjects{Prefix: "kb", Cluster: "c"}
	for _, sh := range []contract.Shard{{}, {Index: 0, Count: 1}, {Index: 1, Count: 3}} {
		subjects := base.OfShard(sh)
		enc := &encode.Encoder{Subjects: subjects, Term: 7}
		want := ""
		if sh.Sharded() {
			want = sh.String()
		}
		for _, c := range changes {
			e, err := enc.EncodeWithin(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := cenats.Decode(e.Msg)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := ev.Extensions()[contract.ExtShard].(string); got != want {
				t.Errorf("shard %v, %s: shard extension %q, want %q", sh, c.Verb, got, want)
			}
			wantSubject := map[informers.Verb]string{
				informers.Added: base.Object(configMaps.Type(), "default", "app-config"), informers.SnapshotItem: base.Object(configMaps.Type(), "default", "app-config"),
				informers.SnapshotBegin: subjects.SnapshotBegin(configMaps.Type()), informers.SnapshotEnd: subjects.SnapshotEnd(configMaps.Type()),
			}[c.Verb]
			if e.Msg.Subject != wantSubject {
				t.Errorf("shard %v, %s: subject %s, want %s", sh, c.Verb, e.Msg.Subject, wantSubject)
			}
		}
		m, err := enc.TermMarker(contract.TermData{Holder: "h"}, observedAt)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(contract.Header(contract.ExtShard)); got != want || m.Subject != subjects.Term() {
			t.Errorf("shard %v: term marker on %s with shard %q, want %s and %q", sh, m.Subject, got, subjects.Term(), want)
		}
	}
}

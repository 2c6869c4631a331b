package cli

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/consume"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/streamread"
)

// Kinds of findings verify makes on top of consume's violations.
const (
	// UnframedItem: a snapshot item whose snapshot is not the open one
	// of its type, although begin markers of the type were read before.
	UnframedItem consume.ViolationKind = "unframed-item"
	// ItemSkipped is no breach: an item read before any begin marker of
	// its type (the begin was compacted away).
	ItemSkipped consume.ViolationKind = "item-skipped"
	// CountMismatch: a snapshot has more items in the stream than its end
	// marker counts. (Fewer is normal: compaction and deletes' roll-ups
	// remove items.)
	CountMismatch consume.ViolationKind = "count-mismatch"
	// MsgIDMismatch: a message whose Nats-Msg-Id is not <cluster>/<ce-id>,
	// so JetStream's de-duplication does not work for it.
	MsgIDMismatch consume.ViolationKind = "msg-id-mismatch"
)

// breach reports whether a finding breaks the contract.
func breach(k consume.ViolationKind) bool { return k != ItemSkipped && k.Breach() }

// finding is one violation, with the type it was found in.
type finding struct {
	consume.Violation
	Type string `json:"type,omitempty"`
}

// typeCheck is what verify holds for one type (one version of it): an
// Applier for consume's checks and its own counters for the rest.
type typeCheck struct {
	t     streamType
	a     *consume.Applier
	verbs map[consume.Verb]uint64
	// open is, per shard, the snapshot whose begin was read last, until
	// its end; begun holds the shards a begin marker was read of.
	open    map[contract.Shard]string
	begun   map[contract.Shard]bool
	items   map[string]int // snapshot id → items read
	counted uint64         // items end markers counted
	// unfinished counts snapshots whose begin was followed by another
	// begin instead of their end (their bridge stopped meanwhile).
	unfinished uint64
	// truncated holds the keys of objects whose last event was truncated:
	// their content is not compared with the cluster's.
	truncated map[string]bool
}

// verifier replays messages in stream order and checks them.
type verifier struct {
	c         *conn
	namespace string
	// only restricts verify to these types; nil: every type.
	only []streamType

	types    []*typeCheck
	terms    []consume.TermMarker
	seed     maphash.Seed
	ids      map[uint64]uint64 // hash of ce-id → seq
	findings []finding

	messages, firstSeq, lastSeq uint64
	// cur collects what the Applier hooks report for the current message.
	cur       []consume.Violation
	curFenced bool
}

func newVerifier(c *conn, namespace string, only []streamType) *verifier {
	return &verifier{c: c, namespace: namespace, only: only, seed: maphash.MakeSeed(), ids: map[uint64]uint64{}}
}

// typeOf returns the check of ev's type, created on first sight; nil
// when verify leaves the type out.
func (v *verifier) typeOf(ev *consume.Event) (*typeCheck, error) {
	t := streamType{Group: ev.Resource.Group, Version: ev.Resource.Version, Resource: ev.Resource.Resource}
	for _, tc := range v.types {
		if tc.t == t {
			return tc, nil
		}
	}
	if v.only != nil && !slices.ContainsFunc(v.only, func(o streamType) bool {
		return o.Group == t.Group && o.Resource == t.Resource && (o.Version == "" || o.Version == t.Version)
	}) {
		return nil, nil
	}
	// Each version is checked on its own: the bridge publishes one object
	// under two versions (HPA v1 and v2) as two types.
	a, err := v.c.client.NewApplier([]consume.Filter{{Resource: t.filter(), Namespace: v.namespace}}, consume.WithHooks(consume.Hooks{
		OnViolation: func(x consume.Violation) { v.cur = append(v.cur, x) },
		OnFenced:    func(*consume.Event) { v.curFenced = true },
	}))
	if err != nil {
		return nil, err
	}
	// Markers read before the type showed up count for it too.
	a.AddTermMarkers(v.terms...)
	tc := &typeCheck{t: t, a: a, verbs: map[consume.Verb]uint64{}, items: map[string]int{}, open: map[contract.Shard]string{}, begun: map[contract.Shard]bool{},
		truncated: map[string]bool{}}
	v.types = append(v.types, tc)
	return tc, nil
}

// add records a finding unless the Applier reported the same kind for
// this message already.
func (v *verifier) add(tc *typeCheck, x consume.Violation) {
	for _, c := range v.cur {
		if c.Kind == x.Kind && c.Seq == x.Seq {
			return
		}
	}
	v.findings = append(v.findings, finding{Violation: x, Type: typeName(tc)})
}

func typeName(tc *typeCheck) string {
	if tc == nil {
		return ""
	}
	return tc.t.filter()
}

// message checks and applies one stored message.
func (v *verifier) message(seq uint64, msg *nats.Msg) error {
	v.messages++
	if v.firstSeq == 0 {
		v.firstSeq = seq
	}
	v.lastSeq = seq
	v.cur, v.curFenced = v.cur[:0], false
	ev, err := v.c.client.Decode(seq, msg)
	if errors.Is(err, consume.ErrUnsupportedContract) {
		return err
	}
	if err != nil {
		v.findings = append(v.findings, finding{Violation: consume.Violation{Kind: consume.Undecodable, Seq: seq, Subject: msg.Subject, Detail: err.Error(), Err: err}})
		return nil
	}
	if ev.Verb == consume.Term {
		v.terms = append(v.terms, consume.TermMarker{Seq: seq, Shard: ev.Shard})
		for _, tc := range v.types {
			if err := tc.a.Apply(ev); err != nil {
				return err
			}
		}
		v.checkID(nil, ev, msg)
		return nil
	}
	tc, err := v.typeOf(ev)
	if err != nil || tc == nil {
		return err
	}
	if err := tc.a.Apply(ev); err != nil {
		return err
	}
	for _, x := range v.cur {
		v.findings = append(v.findings, finding{Violation: x, Type: typeName(tc)})
	}
	if v.curFenced {
		// A deposed leader's event: consumers ignore it, so do the
		// checks (the Applier counts it).
		return nil
	}
	tc.verbs[ev.Verb]++
	if !ev.Verb.IsMarker() {
		if ev.Truncated && ev.Verb != consume.Deleted {
			tc.truncated[ev.Key()] = true
		} else {
			delete(tc.truncated, ev.Key())
		}
	}
	v.checkID(tc, ev, msg)
	v.checkFraming(tc, ev)
	return nil
}

// checkID requires every event id to be stored once, and Nats-Msg-Id to
// be <cluster>/<id>, which is what makes JetStream drop re-publishes.
func (v *verifier) checkID(tc *typeCheck, ev *consume.Event, msg *nats.Msg) {
	id := ev.CloudEvent.ID()
	x := consume.Violation{Seq: ev.Seq, Subject: ev.Subject, ID: id}
	h := maphash.String(v.seed, id)
	if first, ok := v.ids[h]; ok {
		x.Kind, x.Detail = consume.DuplicateID, fmt.Sprintf("event id %s stored before at seq %d", id, first)
		v.add(tc, x)
	} else {
		v.ids[h] = ev.Seq
	}
	if got, want := msg.Header.Get(contract.HeaderMsgID), v.c.subjects.Cluster+"/"+id; got != want {
		x.Kind, x.Detail = MsgIDMismatch, fmt.Sprintf("Nats-Msg-Id %q, want %q", got, want)
		v.add(tc, x)
	}
}

// checkFraming follows each type's snapshots: items belong to the open
// snapshot, and an end counts at least the items read.
func (v *verifier) checkFraming(tc *typeCheck, ev *consume.Event) {
	x := consume.Violation{Seq: ev.Seq, Subject: ev.Subject, ID: ev.CloudEvent.ID()}
	switch ev.Verb {
	case consume.SnapshotBegin:
		if open := tc.open[ev.Shard]; open != "" && open != ev.SnapshotID {
			tc.unfinished++
		}
		tc.open[ev.Shard], tc.begun[ev.Shard] = ev.SnapshotID, true
	case consume.SnapshotItem:
		switch {
		case ev.SnapshotID == tc.open[ev.Shard]:
			tc.items[ev.SnapshotID]++
		case !tc.begun[ev.Shard]:
			x.Kind, x.Detail = ItemSkipped, fmt.Sprintf("item of snapshot %s before any begin marker of its type%s (compacted away)", ev.SnapshotID, shardNote(ev.Shard))
			v.add(tc, x)
		default:
			x.Kind, x.Detail = UnframedItem, fmt.Sprintf("item of snapshot %s, but the open snapshot%s is %q", ev.SnapshotID, shardNote(ev.Shard), tc.open[ev.Shard])
			v.add(tc, x)
		}
	case consume.SnapshotEnd:
		if ev.SnapshotID != tc.open[ev.Shard] {
			return // the Applier reports it
		}
		if n := tc.items[ev.SnapshotID]; n > ev.SnapshotCount && v.namespace == "" {
			x.Kind, x.Detail = CountMismatch, fmt.Sprintf("snapshot %s: %d items in the stream, its end marker counts %d", ev.SnapshotID, n, ev.SnapshotCount)
			v.add(tc, x)
		}
		tc.counted += uint64(ev.SnapshotCount)
		delete(tc.items, ev.SnapshotID)
		delete(tc.open, ev.Shard)
	}
}

// shardNote names a sharded bridge's shard in a finding.
func shardNote(sh contract.Shard) string {
	if !sh.Sharded() {
		return ""
	}
	return " of shard " + sh.String()
}

// subjects are the consumer's filters: the cluster's subjects (of the
// types and namespace asked for) and its term markers.
func (v *verifier) subjects() []string {
	s := v.c.subjects
	scoped := func(typeSubject string) []string {
		if v.namespace == "" {
			return []string{typeSubject + ".>"}
		}
		return []string{typeSubject + "." + contract.EscapeToken(v.namespace) + ".*", typeSubject + "." + contract.SnapshotToken + ".>"}
	}
	var out []string
	switch {
	case v.only == nil && v.namespace == "":
		return []string{s.ClusterWildcard()}
	case v.only == nil:
		out = scoped(s.Prefix + "." + s.Cluster + ".*.*.*")
	default:
		for _, t := range v.only {
			for _, subj := range scoped(t.subject(s)) {
				if !slices.Contains(out, subj) {
					out = append(out, subj)
				}
			}
		}
	}
	return append(out, s.Terms()...)
}

// read replays the messages stored up to now, oldest first.
func (v *verifier) read(ctx context.Context) error {
	st, err := v.c.js.Stream(ctx, v.c.stream)
	if err != nil {
		return err
	}
	return streamread.Read(ctx, st, jetstream.ConsumerConfig{
		FilterSubjects: v.subjects(),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckNonePolicy,
		MemoryStorage:  true,
	}, streamread.Fetching{Batch: 256, Wait: 2 * time.Second}, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		return v.message(meta.Sequence.Stream, &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
	})
}

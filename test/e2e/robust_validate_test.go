package e2e

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The stream validators of TestRobustness check a whole stream, every
// message, against the history the test's own watches recorded: each
// message carries a version the apiserver made (valid), per object in
// order (ordered), every change of an object in scope reached the stream
// or is accounted for (reliable), each update's oldObject is the version
// the stream published before it (oldObjects), no message is stored twice
// nor after a newer term wrote its subject (unique), and each complete
// snapshot lists each object in scope once (atomic). Each check is in a
// file of its own; this one indexes the history and the stream for them.

// validateStream checks every message of the run's stream against the history.
func validateStream(msgs []replay.Message, hist *history, rules map[string]typeRules) []violation {
	return validateStreamBlind(msgs, hist, rules, nil)
}

// validateStreamBlind is validateStream for a run whose bridges could not
// watch the apiserver during the spans blind (their links cut, the
// apiserver down): a bridge's informer then relists, and the versions
// made meanwhile that the list no longer shows were never the bridge's to
// publish. The reliable check counts a change made in such a span (with a
// margin) and followed by a message of its object as missed by a relist,
// rather than lost.
func validateStreamBlind(msgs []replay.Message, hist *history, rules map[string]typeRules, blind []blindSpan) []violation {
	run := newValRun(msgs, hist, rules)
	run.blind = blind
	var out []violation
	out = append(out, run.checkValid()...)
	out = append(out, run.checkOrdered()...)
	out = append(out, run.checkReliable()...)
	out = append(out, run.checkOldObjects()...)
	out = append(out, run.checkUnique()...)
	out = append(out, run.checkAtomic()...)
	return out
}

// valRun is what the validators share.
type valRun struct {
	rules map[string]typeRules
	msgs  []replay.Message
	info  []valMsg
	// objects by type and uid ("typ uid"), keys in order.
	objects map[string]*valObject
	keys    []string
	// firstTerm is the sequence of the first term marker of each cluster
	// and shard ("cluster/shard").
	firstTerm map[string]uint64
	// blind are the spans the bridges could not watch a type in.
	blind []blindSpan
	// termBegan is when each term's marker was stored: no bridge of that
	// term published before.
	termBegan map[uint64]time.Time
}

// valMsg is what the validators know of one message beyond itself.
type valMsg struct {
	typ      string // the rules' key of its type; "" for none of them
	key      string // its cluster and shard
	term     uint64 // its term; a term marker's own sequence
	admitted bool   // the term rule (contract §3) lets a consumer apply it
	foreign  bool   // no term marker of its cluster and shard backs its term
}

// valObject is one object (a uid of a type): its versions and messages.
type valObject struct {
	typ, uid        string
	namespace, name string
	versions        []histVersion  // in resourceVersion order, each once
	byRV            map[string]int // resourceVersion → index in versions
	msgs            []int          // admitted object messages, in stream order (indexes into valRun.msgs)
	projected       map[int]any    // index in versions → its projection, as JSON values
}

func newValRun(msgs []replay.Message, hist *history, rules map[string]typeRules) *valRun {
	run := &valRun{rules: rules, msgs: msgs, objects: map[string]*valObject{}}
	for _, v := range hist.versions {
		if _, ok := rules[v.typ]; ok {
			run.object(v.typ, v.uid).addVersion(v)
		}
	}
	for _, o := range run.objects {
		sort.SliceStable(o.versions, func(i, j int) bool { return cmpRV(o.versions[i].rv, o.versions[j].rv) < 0 })
		for i, v := range o.versions {
			o.byRV[v.rv] = i
		}
	}
	run.classify()
	for i, m := range msgs {
		if run.info[i].typ != "" && run.info[i].admitted && isObjectMessage(m) {
			o := run.object(run.info[i].typ, m.Ext(contract.ExtUID))
			o.msgs = append(o.msgs, i)
		}
	}
	sort.Strings(run.keys)
	return run
}

// object returns the object of typ and uid, made on first use.
func (r *valRun) object(typ, uid string) *valObject {
	key := typ + " " + uid
	o := r.objects[key]
	if o == nil {
		o = &valObject{typ: typ, uid: uid, byRV: map[string]int{}, projected: map[int]any{}}
		r.objects[key] = o
		r.keys = append(r.keys, key)
	}
	return o
}

// addVersion records v unless the watch delivered it already (a watch
// resumed across an apiserver restart may deliver a version twice).
func (o *valObject) addVersion(v histVersion) {
	o.namespace, o.name = v.namespace, v.name
	for _, have := range o.versions {
		if have.rv == v.rv && have.verb == v.verb {
			return
		}
	}
	o.versions = append(o.versions, v)
}

// ofType is the rules' key of the type a subject belongs to, "" for none.
func (r *valRun) ofType(subject string) string {
	for typ := range r.rules {
		if strings.HasPrefix(subject, typ+".") {
			return typ
		}
	}
	return ""
}

// classify applies the term rule (contract §3) per cluster and shard, in
// stream order, as internal/replay does: a term marker raises its cluster
// and shard's term; an event of a lower term is a deposed leader's and is
// not admitted; one whose term no marker backs is foreign.
func (r *valRun) classify() {
	r.info = make([]valMsg, len(r.msgs))
	r.firstTerm = map[string]uint64{}
	r.termBegan = map[uint64]time.Time{}
	markers := map[string][]uint64{}
	highest := map[string]uint64{}
	for i, m := range r.msgs {
		info := valMsg{typ: r.ofType(m.Subject), key: clusterShard(m)}
		if m.Event.Type() == contract.TypeTerm {
			info.term, info.admitted = m.Seq, true
			r.termBegan[m.Seq] = m.Stored
			if _, ok := r.firstTerm[info.key]; !ok {
				r.firstTerm[info.key] = m.Seq
			}
			markers[info.key] = append(markers[info.key], m.Seq)
			highest[info.key] = max(highest[info.key], m.Seq)
			r.info[i] = info
			continue
		}
		term, err := contract.TermOf(m.Header)
		ms := markers[info.key]
		info.term = term
		info.foreign = err != nil || (term != 0 && (term >= m.Seq || (len(ms) > 0 && term >= ms[0] && !containsSeq(ms, term))))
		if !info.foreign && term >= highest[info.key] {
			info.admitted = true
			highest[info.key] = term
		}
		r.info[i] = info
	}
}

func containsSeq(seqs []uint64, s uint64) bool {
	i := sort.Search(len(seqs), func(i int) bool { return seqs[i] >= s })
	return i < len(seqs) && seqs[i] == s
}

// clusterShard is the cluster and shard whose terms rule a message: no
// shard extension is shard 0/1.
func clusterShard(m replay.Message) string {
	shard := m.Ext(contract.ExtShard)
	if sh, err := contract.ParseShard(shard); err != nil || !sh.Sharded() {
		shard = ""
	}
	return m.Ext(contract.ExtCluster) + "/" + shard
}

// isObjectMessage tells the messages that carry an object.
func isObjectMessage(m replay.Message) bool {
	switch m.Event.Type() {
	case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted, contract.TypeSnapshotItem:
		return true
	}
	return false
}

// isUpsert tells the messages a consumer stores the object of.
func isUpsert(m replay.Message) bool {
	switch m.Event.Type() {
	case contract.TypeAdded, contract.TypeUpdated, contract.TypeSnapshotItem:
		return true
	}
	return false
}

// objectOf finds the object a message is about.
func (r *valRun) objectOf(i int) *valObject {
	return r.objects[r.info[i].typ+" "+r.msgs[i].Ext(contract.ExtUID)]
}

// version is the object's version at rv.
func (o *valObject) version(rv string) (histVersion, int, bool) {
	i, ok := o.byRV[rv]
	if !ok {
		return histVersion{}, -1, false
	}
	return o.versions[i], i, true
}

// inScope tells whether the object is in the bridge's scope at version i.
func (r *valRun) inScope(o *valObject, i int) bool {
	v := o.versions[i]
	return r.rules[o.typ].inScope(v.object)
}

// projection is what the bridge publishes of version i, as JSON values.
func (r *valRun) projection(o *valObject, i int) any {
	p, ok := o.projected[i]
	if !ok {
		p = jsonValue(r.rules[o.typ].project(o.versions[i].object))
		o.projected[i] = p
	}
	return p
}

// subject is the object's subject, as a message of it spells it, or as
// contract §6 does.
func (r *valRun) subject(o *valObject) string {
	if len(o.msgs) > 0 {
		return r.msgs[o.msgs[0]].Subject
	}
	ns := contract.EscapeToken(o.namespace)
	if o.namespace == "" {
		ns = "_cluster"
	}
	return o.typ + "." + ns + "." + contract.EscapeToken(o.name)
}

// violation makes a violation about message i.
func (r *valRun) violation(check string, i int, detail string) violation {
	m := r.msgs[i]
	return violation{check: check, uid: m.Ext(contract.ExtUID), subject: m.Subject, seq: m.Seq, detail: detail}
}

// story is the object's history and admitted messages, briefly, for a
// violation's detail.
func (r *valRun) story(o *valObject) string {
	if o == nil {
		return "(an object the history does not have)"
	}
	var hist []string
	for i, v := range o.versions {
		s := v.rv + " " + string(v.verb)
		if v.verb != watch.Deleted && !r.inScope(o, i) {
			s += " (out of scope)"
		}
		hist = append(hist, s)
	}
	msgs := make([]replay.Message, 0, len(o.msgs))
	for _, i := range o.msgs {
		msgs = append(msgs, r.msgs[i])
	}
	return "history of " + o.namespace + "/" + o.name + ": " + brief(hist, "; ") + "; its messages: " + briefMsgs(msgs)
}

// brief joins at most 24 parts, eliding the middle of longer lists.
func brief(parts []string, sep string) string {
	const most = 24
	if len(parts) > most {
		parts = append(append(append([]string(nil), parts[:most/2]...), "…"), parts[len(parts)-most/2:]...)
	}
	return strings.Join(parts, sep)
}

// briefMsgs is describeBrief for at most 24 messages.
func briefMsgs(msgs []replay.Message) string {
	if len(msgs) == 0 {
		return "none"
	}
	var parts []string
	for _, m := range msgs {
		parts = append(parts, describeBrief([]replay.Message{m}))
	}
	return brief(parts, "; ")
}

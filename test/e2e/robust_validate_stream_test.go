package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The stream of a valScenario, as JetStream would store it: each message
// a CloudEvent made with event.New and the contract's extensions, written
// to NATS headers by pkg/cenats and decoded back as replay.ReadAll does
// (every extension a string).

// build writes the stream: message i has sequence i+1.
func (s *valScenario) build() []replay.Message {
	s.t.Helper()
	termSeq := map[int]uint64{}
	var out []replay.Message
	for i, sp := range s.specs {
		seq := uint64(i + 1)
		if sp.ceType == contract.TypeTerm {
			termSeq[sp.term] = seq
		}
		out = append(out, s.message(sp, seq, termSeq[sp.term]))
	}
	return out
}

// message encodes one spec as JetStream would store it.
func (s *valScenario) message(sp *valSpec, seq, term uint64) replay.Message {
	s.t.Helper()
	ev := event.New()
	ev.SetType(sp.ceType)
	ev.SetTime(sp.at)
	ev.SetSource("k8s://c/api/v1/namespaces/n1/" + lastToken(sp.typ))
	ev.SetExtension(contract.ExtCluster, "c")
	subject := "kb.c._term"
	switch sp.ceType {
	case contract.TypeTerm:
		ev.SetID(fmt.Sprintf("term/holder-%d/%d", sp.term, sp.term))
		ev.SetSource("k8s://c")
		if err := ev.SetData(event.ApplicationJSON, contract.TermData{Holder: fmt.Sprintf("holder-%d", sp.term)}); err != nil {
			s.t.Fatal(err)
		}
	case contract.TypeSnapshotBegin, contract.TypeSnapshotEnd:
		verb := strings.TrimPrefix(sp.ceType, "io.kubebridge.")
		subject = sp.typ + "._" + verb
		ev.SetID(fmt.Sprintf("%s/%s/%s", lastToken(sp.typ), sp.sid, verb))
		ev.SetExtension(contract.ExtSnapshotID, sp.sid)
		ev.SetExtension(contract.ExtTerm, strconv.FormatUint(term, 10))
		if sp.ceType == contract.TypeSnapshotEnd {
			ev.SetExtension(contract.ExtSnapshotCount, strconv.Itoa(sp.count))
		}
	default:
		subject = s.objectEvent(&ev, sp, term)
	}
	nm, err := cenats.Message(&ev, subject)
	if err != nil {
		s.t.Fatal(err)
	}
	decoded, err := cenats.Decode(nm)
	if err != nil {
		s.t.Fatal(err)
	}
	return replay.Message{Seq: seq, Subject: subject, Header: nm.Header, Data: nm.Data, Event: decoded, Stored: sp.at}
}

// objectEvent fills in an object message's attributes and data; it
// returns its subject.
func (s *valScenario) objectEvent(ev *event.Event, sp *valSpec, term uint64) string {
	v := s.hist.versions[sp.v]
	rv := v.rv
	if sp.rv != "" {
		rv = sp.rv
	}
	verb := strings.TrimPrefix(strings.TrimPrefix(sp.ceType, "io.kubebridge."), "object.")
	tail := fmt.Sprintf("%s/%d", verb, term)
	if sp.ceType == contract.TypeSnapshotItem {
		tail = "snapshot.item/" + sp.sid
		ev.SetExtension(contract.ExtSnapshotID, sp.sid)
	}
	ev.SetID(fmt.Sprintf("%s/%s/%s/%s", lastToken(sp.typ), v.uid, rv, tail))
	ev.SetSubject(v.namespace + "/" + v.name)
	for k, val := range map[string]string{contract.ExtNamespace: v.namespace, contract.ExtName: v.name, contract.ExtUID: v.uid,
		contract.ExtResourceVersion: rv, contract.ExtTerm: strconv.FormatUint(term, 10)} {
		ev.SetExtension(k, val)
	}
	if sp.coalesced != 0 {
		ev.SetExtension(contract.ExtCoalesced, sp.coalesced)
	}
	if sp.fsu {
		ev.SetExtension(contract.ExtFinalStateUnknown, "true")
	}
	if sp.truncated {
		ev.SetExtension(contract.ExtTruncated, "true")
	}
	data := map[string]any{"object": s.published(sp, sp.v)}
	if sp.old >= 0 {
		data["oldObject"] = s.published(sp, sp.old)
	}
	b, err := json.Marshal(data)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := ev.SetData(event.ApplicationJSON, b); err != nil {
		s.t.Fatal(err)
	}
	return sp.typ + "." + v.namespace + "." + v.name
}

// published is what a bridge publishes of version v in spec sp.
func (s *valScenario) published(sp *valSpec, v int) any {
	if sp.object != nil && v == sp.v {
		return sp.object
	}
	hv := s.hist.versions[v]
	project := s.rules[hv.typ].project
	if project == nil { // a type the run does not check
		project = func(obj map[string]any) map[string]any { return obj }
	}
	obj := jsonValue(project(hv.object))
	if sp.leave && v == sp.v {
		prev := v - 1
		for s.hist.versions[prev].uid != hv.uid {
			prev--
		}
		obj = withResourceVersion(jsonValue(project(s.hist.versions[prev].object)), hv.rv)
	}
	if sp.truncated {
		return truncatedForm(obj)
	}
	return obj
}

// lastToken is the resource of a type's subject prefix.
func lastToken(typ string) string { return typ[strings.LastIndex(typ, ".")+1:] }

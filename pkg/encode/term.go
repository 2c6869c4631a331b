package encode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// TermToken takes the group position in the subject of term markers,
// <prefix>.<cluster>._term. Like the other underscore tokens it cannot be
// an escaped group.
const TermToken = "_term"

// ContractVersion is the version of the event contract (docs/contract.md)
// this encoder writes, major.minor. Every term marker carries it. A reader
// accepts a newer minor (additions it may ignore) and refuses a major it
// does not know.
const ContractVersion = "1.1"

// ExtContractVersion is the term marker's extension that carries
// ContractVersion. A term marker without it was written under 1.0.
const ExtContractVersion = "contractversion"

// ContractMajor returns the major version of a contract version string
// ("1.1" → 1); a term marker without one is 1.0.
func ContractMajor(version string) (int, error) {
	if version == "" {
		return 1, nil
	}
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("encode: %s %q is not major.minor", ExtContractVersion, version)
	}
	return n, nil
}

// Term is the subject of this cluster's term markers.
func (s Subjects) Term() string { return s.Prefix + "." + s.Cluster + "." + TermToken }

// TermData is the payload of a term marker: who leads, and after whom.
type TermData struct {
	Holder         string `json:"holder"`
	PreviousHolder string `json:"previousHolder,omitempty"`
}

// TermMarker builds the message a bridge publishes before anything else
// when it starts to lead (or starts, without leader election). The stream
// sequence JetStream stores it at is the new term: it is higher than every
// earlier term, and every message a deposed leader stores after it carries
// a lower one, which is how consumers recognise such messages.
func (e *Encoder) TermMarker(d TermData, at time.Time) (*nats.Msg, error) {
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetType(TypeTerm)
	ev.SetTime(at)
	ev.SetSource("k8s://" + e.Subjects.Cluster)
	ev.SetSubject(d.Holder)
	// Unique per start: a retry of the same marker is dropped by
	// JetStream as a duplicate, a new term never is.
	ev.SetID("term/" + d.Holder + "/" + strconv.FormatInt(at.UnixNano(), 10))
	ev.SetExtension(ExtCluster, e.Subjects.Cluster)
	ev.SetExtension(ExtContractVersion, ContractVersion)
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode: term marker: %w", err)
	}
	ev.SetDataContentType(ContentTypeJSON)
	ev.DataEncoded = data
	return e.toMsg(&ev, e.Subjects.Term())
}

// TermHeader is the NATS header that carries an event's term.
const TermHeader = ceHeaderPrefix + ExtTerm

// TermOf reads the term of a message's headers: 0 when it has none, as
// messages of bridges older than terms do.
func TermOf(h nats.Header) (uint64, error) {
	v := h.Get(TermHeader)
	if v == "" {
		return 0, nil
	}
	t, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("encode: %s %q is not a term: %w", TermHeader, v, err)
	}
	return t, nil
}

package encode

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// The ce- header of every attribute and extension the encoder writes.
const (
	hSpecVersion     = contract.HeaderSpecVersion
	hType            = contract.HeaderType
	hID              = contract.HeaderPrefix + "id"
	hSource          = contract.HeaderPrefix + "source"
	hSubject         = contract.HeaderPrefix + "subject"
	hTime            = contract.HeaderPrefix + "time"
	hDataContentType = contract.HeaderPrefix + "datacontenttype"

	hCluster         = contract.HeaderPrefix + contract.ExtCluster
	hKind            = contract.HeaderPrefix + contract.ExtKind
	hAPIVersion      = contract.HeaderPrefix + contract.ExtAPIVersion
	hNamespace       = contract.HeaderPrefix + contract.ExtNamespace
	hName            = contract.HeaderPrefix + contract.ExtName
	hUID             = contract.HeaderPrefix + contract.ExtUID
	hResourceVersion = contract.HeaderPrefix + contract.ExtResourceVersion
	hSnapshotID      = contract.HeaderPrefix + contract.ExtSnapshotID
	hSnapshotCount   = contract.HeaderPrefix + contract.ExtSnapshotCount
	hFinalState      = contract.HeaderPrefix + contract.ExtFinalStateUnknown
	hTruncated       = contract.HeaderPrefix + contract.ExtTruncated
	hCoalesced       = contract.HeaderPrefix + contract.ExtCoalesced
	hUnpublished     = contract.HeaderPrefix + contract.ExtUnpublished
	hScopeNamespaces = contract.HeaderPrefix + contract.ExtScopeNamespaces
	hScopeLabels     = contract.HeaderPrefix + contract.ExtScopeLabels
	hScopeFields     = contract.HeaderPrefix + contract.ExtScopeFields
	hScopeMatch      = contract.HeaderPrefix + contract.ExtScopeMatch
	hScopeIgnore     = contract.HeaderPrefix + contract.ExtScopeIgnoreFields
	hTerm            = contract.TermHeader
	hContractVersion = contract.HeaderPrefix + contract.ExtContractVersion
	hShard           = contract.HeaderPrefix + contract.ExtShard
)

// ceMessage builds a CloudEvent in the NATS binding's binary content mode
// straight into a nats.Msg: every attribute and extension a ce- header, in
// the canonical string form sdk-go's binding writes (cenats.Message), and
// datacontenttype also as Content-Type. Every event goes through it,
// skipping sdk-go's in-memory event, its extension map and its binding
// writer. The tests read each event back with sdk-go and write it again
// with cenats.Message, which must give the same headers.
type ceMessage struct {
	header nats.Header
	// values backs every header's one-value slice, in the same
	// allocation as the message.
	values [maxHeaders]string
	n      int
	// msg is the message handed out, kept here so that a released
	// ceMessage brings its nats.Msg and header map back for reuse.
	msg nats.Msg
	// lines and lineBytes count the header lines set and their keys'
	// and values' bytes, kept as they are set so that sizing a message
	// (twice per event: the payload limit and the byte budget) does not
	// walk its header map.
	lines, lineBytes int
}

// maxHeaders is the most headers one event gets: the required attributes,
// time, subject, the data content type twice, the extensions of an object
// event or a marker, and the JetStream headers.
const maxHeaders = 24

// newMessage starts an event's message with its required attributes and
// time (in the form formatTime gives), reusing one handed back with
// Encoded.Release: its header map keeps its room, so an event's headers
// cost no allocation.
func (e *Encoder) newMessage(typ, id, source, time string) *ceMessage {
	m, ok := e.messages.Get().(*ceMessage)
	if !ok {
		m = &ceMessage{header: make(nats.Header, maxHeaders)}
	}
	m.set(hSpecVersion, "1.0")
	m.set(hType, typ)
	m.set(hID, id)
	m.set(hSource, source)
	m.set(hTime, time)
	return m
}

// reset empties m for another event, letting go of every value it held.
func (m *ceMessage) reset() {
	clear(m.header)
	clear(m.values[:m.n])
	m.n = 0
	m.lines, m.lineBytes = 0, 0
	m.msg = nats.Msg{}
}

// formatTime is an event's time attribute: RFC 3339 in UTC, with as many
// fractional digits as it has.
func formatTime(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }

// set gives key the one value v; nats.Header.Set would allocate a slice
// per header.
func (m *ceMessage) set(key, v string) {
	// Every key is set once per event (TestEncodedSizesMatchTheHeaders).
	m.lines++
	m.lineBytes += len(key) + len(v)
	if m.n == len(m.values) {
		m.header[key] = []string{v}
		return
	}
	m.values[m.n] = v
	m.n++
	m.header[key] = m.values[m.n-1 : m.n : m.n]
}

func (m *ceMessage) setInt(key string, v int) { m.set(key, strconv.Itoa(v)) }

func (m *ceMessage) setTrue(key string) { m.set(key, "true") }

// jsonData declares the payload JSON.
func (m *ceMessage) jsonData() {
	m.set(hDataContentType, contract.ContentTypeJSON)
	m.set(contract.HeaderContentType, contract.ContentTypeJSON)
}

// msg is the message for subject, with the JetStream headers the bridge
// sends beside the event. msgID is the event's id scoped by its cluster
// (msgID below).
func (e *Encoder) msg(m *ceMessage, subject, msgID string, deleted bool, payload []byte) *nats.Msg {
	m.set(contract.HeaderMsgID, msgID)
	if deleted {
		if e.TombstoneTTL > 0 {
			// JetStream counts TTLs in whole seconds and cuts fractions
			// off; rounding up never expires a delete early.
			m.set(contract.HeaderTTL, ((e.TombstoneTTL + time.Second - 1) / time.Second * time.Second).String())
		}
		if e.TombstoneRollup {
			m.set(contract.HeaderRollup, contract.RollupSubject)
		}
	}
	m.msg = nats.Msg{Subject: subject, Header: m.header, Data: payload}
	return &m.msg
}

// msgID is the Nats-Msg-Id of the event id in cluster: one stream may hold
// several clusters, and ids are unique per source, so the de-duplication
// key is scoped by cluster.
func msgID(cluster, id string) string { return cluster + "/" + id }

// wireSize is the size NATS counts against max_payload: the header block as
// nats.go writes it ("NATS/1.0", a line per value, a blank line) and the
// data.
func (m *ceMessage) wireSize() int {
	const blockLines, perLine = len("NATS/1.0\r\n") + len("\r\n"), len(": ") + len("\r\n")
	return blockLines + m.lineBytes + m.lines*perLine + len(m.msg.Data)
}

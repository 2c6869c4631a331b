package contract

import (
	"errors"
	"strconv"
	"strings"
)

// Event types (docs/contract.md §2).
const (
	TypeAdded         = "io.kubebridge.object.added"
	TypeUpdated       = "io.kubebridge.object.updated"
	TypeDeleted       = "io.kubebridge.object.deleted"
	TypeSnapshotBegin = "io.kubebridge.snapshot.begin"
	TypeSnapshotItem  = "io.kubebridge.snapshot.item"
	TypeSnapshotEnd   = "io.kubebridge.snapshot.end"
	// TypeTerm marks the start of a leader's term (§3).
	TypeTerm = "io.kubebridge.term"
)

// Extension attribute names (§1; CloudEvents: lowercase letters and digits).
const (
	ExtCluster           = "cluster"
	ExtKind              = "kind"
	ExtAPIVersion        = "apiversion"
	ExtNamespace         = "namespace"
	ExtName              = "name"
	ExtUID               = "uid"
	ExtResourceVersion   = "resourceversion"
	ExtSnapshotID        = "snapshotid"
	ExtSnapshotCount     = "snapshotcount"
	ExtFinalStateUnknown = "finalstateunknown"
	ExtTruncated         = "truncated"
	ExtCoalesced         = "coalesced"
	ExtUnpublished       = "unpublished"
	// ExtScopeNamespaces, ExtScopeLabels and ExtScopeFields, on a
	// snapshot begin marker, say what the type is watched for: the
	// namespaces (comma-separated), the label selector and the field
	// selector. Absent means all. A reader comparing the stream with the
	// cluster compares within them.
	ExtScopeNamespaces = "scopenamespaces"
	ExtScopeLabels     = "scopelabels"
	ExtScopeFields     = "scopefields"
	// ExtScopeMatch, on a snapshot begin marker, is the type's match rule
	// (contract §12): the CEL expression over object that an object is in
	// scope while it is true for. Absent: every object is.
	ExtScopeMatch = "scopematch"
	// ExtScopeIgnoreFields, on a snapshot begin marker, is the type's
	// ignoreFields (§11): the paths removed from every published object,
	// as compact JSON, e.g. [["status"],["metadata","annotations","x"]].
	// Absent: none.
	ExtScopeIgnoreFields = "scopeignorefields"
	// ExtTerm is the stream sequence of the term marker of the bridge that
	// wrote the event, in decimal (a string: sequences outgrow the
	// CloudEvents integer).
	ExtTerm = "term"
	// ExtContractVersion is the term marker's extension that carries
	// ContractVersion. A term marker without it was written under 1.0.
	ExtContractVersion = "contractversion"
	// ExtShard is the shard of the bridge that wrote the event or marker,
	// "<i>/<N>" (Shard.String), when it is one of N > 1 shards. Absent
	// means 0/1: the unsharded bridge's. A snapshot end sweeps only the
	// objects whose last event carried its shard.
	ExtShard = "shard"
)

// HeaderPrefix starts the NATS header of every CloudEvents attribute in
// binary content mode.
const HeaderPrefix = "ce-"

// Header is the NATS header that carries an attribute or extension, for
// readers that look at headers without decoding the event.
func Header(attribute string) string { return HeaderPrefix + attribute }

// Header names of the attributes headers-only readers (the missed-delete
// scan, the fence, the term reader) look at.
const (
	HeaderSpecVersion = HeaderPrefix + "specversion"
	HeaderType        = HeaderPrefix + "type"
	TermHeader        = HeaderPrefix + ExtTerm
)

// Header names outside the ce- attribute set.
const (
	HeaderContentType = "Content-Type"
	// HeaderMsgID is JetStream's de-duplication header: <cluster>/<event id>.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderTTL is JetStream's per-message TTL (nats-server 2.11 or later,
	// on a stream with AllowMsgTTL), sent on deleted events.
	HeaderTTL = "Nats-TTL"
	// HeaderRollup with RollupSubject makes JetStream purge the subject's
	// earlier messages when it stores this one (AllowRollup), sent on
	// deleted events.
	HeaderRollup  = "Nats-Rollup"
	RollupSubject = "sub"
)

// ContentTypeJSON is the datacontenttype of every event with data.
const ContentTypeJSON = "application/json"

// Data is the payload of an object event (§5), named as in AdmissionReview.
type Data struct {
	Object    RawJSON `json:"object,omitempty"`
	OldObject RawJSON `json:"oldObject,omitempty"`
	// Patch, on an update of a type whose rules ask for it (§14), is the
	// RFC 6902 JSON Patch from the published oldObject, sent or not, to
	// the published object.
	Patch RawJSON `json:"patch,omitempty"`
}

// RawJSON is encoded JSON kept as it is, as json.RawMessage is; declared
// here so that this package does not compile encoding/json (see doc.go).
type RawJSON []byte

// MarshalJSON returns m, or null for none.
func (m RawJSON) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	return m, nil
}

// UnmarshalJSON keeps a copy of data.
func (m *RawJSON) UnmarshalJSON(data []byte) error {
	if m == nil {
		return errors.New("contract: RawJSON: UnmarshalJSON on nil pointer")
	}
	*m = append((*m)[0:0], data...)
	return nil
}

// ContractVersion is the version of the event contract (docs/contract.md
// §0) the bridge writes, major.minor. Every term marker carries it. A
// reader accepts a newer minor (additions it may ignore) and refuses a
// major it does not know.
const ContractVersion = "1.3"

// ContractMajor returns the major version of a contract version string
// ("1.2" → 1); a term marker without one is 1.0.
func ContractMajor(version string) (int, error) {
	if version == "" {
		return 1, nil
	}
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 1 {
		return 0, errors.New("contract: " + ExtContractVersion + " " + strconv.Quote(version) + " is not major.minor")
	}
	return n, nil
}

// TermData is the payload of a term marker: who leads, and after whom.
type TermData struct {
	Holder         string `json:"holder"`
	PreviousHolder string `json:"previousHolder,omitempty"`
}

// Headers is what TermOf reads: a nats.Header, without this package
// depending on nats.go.
type Headers interface {
	Get(key string) string
}

// TermOf reads the term of a message's headers: 0 when it has none, as
// messages of bridges older than terms do.
func TermOf(h Headers) (uint64, error) {
	v := h.Get(TermHeader)
	if v == "" {
		return 0, nil
	}
	t, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &wrapped{"contract: " + TermHeader + " " + strconv.Quote(v) + " is not a term: " + err.Error(), err}
	}
	return t, nil
}

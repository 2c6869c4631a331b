package encode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TermMarker builds the message a bridge publishes before anything else
// when it starts to lead (or starts, without leader election). The stream
// sequence JetStream stores it at is the new term: it is higher than every
// earlier term, and every message a deposed leader stores after it carries
// a lower one, which is how consumers recognise such messages.
func (e *Encoder) TermMarker(d contract.TermData, at time.Time) (*nats.Msg, error) {
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetType(contract.TypeTerm)
	ev.SetTime(at)
	ev.SetSource("k8s://" + e.Subjects.Cluster)
	ev.SetSubject(d.Holder)
	// Unique per start: a retry of the same marker is dropped by
	// JetStream as a duplicate, a new term never is.
	ev.SetID("term/" + d.Holder + "/" + strconv.FormatInt(at.UnixNano(), 10))
	ev.SetExtension(contract.ExtCluster, e.Subjects.Cluster)
	ev.SetExtension(contract.ExtContractVersion, contract.ContractVersion)
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode: term marker: %w", err)
	}
	ev.SetDataContentType(contract.ContentTypeJSON)
	ev.DataEncoded = data
	return e.toMsg(&ev, e.Subjects.Term())
}

package encode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TermMarker builds the message a bridge publishes before anything else
// when it starts to lead (or starts, without leader election). The stream
// sequence JetStream stores it at is the new term: it is higher than every
// earlier term, and every message a deposed leader stores after it carries
// a lower one, which is how consumers recognise such messages.
func (e *Encoder) TermMarker(d contract.TermData, at time.Time) (*nats.Msg, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode: term marker: %w", err)
	}
	// Unique per start: a retry of the same marker is dropped by
	// JetStream as a duplicate, a new term never is.
	id := "term/" + d.Holder + "/" + strconv.FormatInt(at.UnixNano(), 10)
	m := e.newMessage(contract.TypeTerm, id, "k8s://"+e.Subjects.Cluster, formatTime(at))
	m.set(hSubject, d.Holder)
	m.set(hCluster, e.Subjects.Cluster)
	m.set(hContractVersion, contract.ContractVersion)
	e.setShard(m)
	m.jsonData()
	return e.msg(m, e.Subjects.Term(), msgID(e.Subjects.Cluster, id), false, data), nil
}

package encode

import (
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// toMsg writes ev in binary content mode (cenats) with the JetStream
// headers the bridge sends beside it.
func (e *Encoder) toMsg(ev *event.Event, subject string) (*nats.Msg, error) {
	msg, err := cenats.Message(ev, subject)
	if err != nil {
		return nil, err
	}
	// One stream may hold several clusters; ids are unique per source,
	// so the de-duplication key is scoped by cluster.
	msg.Header.Set(contract.HeaderMsgID, e.Subjects.Cluster+"/"+ev.ID())
	if ev.Type() == contract.TypeDeleted {
		if e.TombstoneTTL > 0 {
			// JetStream counts TTLs in whole seconds and cuts fractions
			// off; rounding up never expires a delete early.
			msg.Header.Set(contract.HeaderTTL, ((e.TombstoneTTL + time.Second - 1) / time.Second * time.Second).String())
		}
		if e.TombstoneRollup {
			msg.Header.Set(contract.HeaderRollup, contract.RollupSubject)
		}
	}
	return msg, nil
}

// wireSize is the size NATS counts against max_payload: the header block as
// sent plus the data.
func wireSize(m *nats.Msg) int {
	n := len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n + len(m.Data)
}

package encode

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

// toMsg writes ev in binary content mode: every attribute as a ce- header,
// the data as the payload. datacontenttype goes out twice: as Content-Type
// (the binding's header) and as ce-datacontenttype, which is where sdk-go's
// NATS JetStream binding reads it from.
func (e *Encoder) toMsg(ev *event.Event, subject string) (*nats.Msg, error) {
	w := &headerWriter{header: make(nats.Header, 16)}
	if _, err := binding.Write(context.Background(), binding.ToMessage(ev), nil, w); err != nil {
		return nil, fmt.Errorf("encode: write event %s: %w", ev.ID(), err)
	}
	if ct := ev.DataContentType(); ct != "" {
		w.header.Set(HeaderContentType, ct)
	}
	// One stream may hold several clusters; ids are unique per source,
	// so the de-duplication key is scoped by cluster.
	w.header.Set(HeaderMsgID, e.Subjects.Cluster+"/"+ev.ID())
	if ev.Type() == TypeDeleted {
		if e.TombstoneTTL > 0 {
			// JetStream counts TTLs in whole seconds and cuts fractions
			// off; rounding up never expires a delete early.
			w.header.Set(HeaderTTL, ((e.TombstoneTTL + time.Second - 1) / time.Second * time.Second).String())
		}
		if e.TombstoneRollup {
			w.header.Set(HeaderRollup, RollupSubject)
		}
	}
	return &nats.Msg{Subject: subject, Header: w.header, Data: ev.DataEncoded}, nil
}

type headerWriter struct {
	header nats.Header
}

func (w *headerWriter) SetAttribute(a spec.Attribute, v interface{}) error {
	return w.SetExtension(a.Name(), v)
}

func (w *headerWriter) SetExtension(name string, v interface{}) error {
	if v == nil {
		delete(w.header, ceHeaderPrefix+name)
		return nil
	}
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	w.header.Set(ceHeaderPrefix+name, s)
	return nil
}

func (w *headerWriter) Start(context.Context) error { return nil }
func (w *headerWriter) End(context.Context) error   { return nil }

// SetData is a no-op: the payload is taken from the event as it is, without
// a copy through a reader.
func (w *headerWriter) SetData(io.Reader) error { return nil }

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

package cenats

import (
	"context"
	"fmt"
	"io"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// Message writes ev for subject in binary content mode. datacontenttype
// goes out twice: as Content-Type (the binding's header) and as
// ce-datacontenttype, which is where sdk-go's NATS JetStream binding reads
// it from. The data is the event's encoded data, not a copy.
func Message(ev *event.Event, subject string) (*nats.Msg, error) {
	w := &headerWriter{header: make(nats.Header, 16)}
	if _, err := binding.Write(context.Background(), binding.ToMessage(ev), nil, w); err != nil {
		return nil, fmt.Errorf("cenats: write event %s: %w", ev.ID(), err)
	}
	if ct := ev.DataContentType(); ct != "" {
		w.header.Set(contract.HeaderContentType, ct)
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
		delete(w.header, contract.Header(name))
		return nil
	}
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	w.header.Set(contract.Header(name), s)
	return nil
}

func (w *headerWriter) Start(context.Context) error { return nil }
func (w *headerWriter) End(context.Context) error   { return nil }

// SetData is a no-op: the payload is taken from the event as it is, without
// a copy through a reader.
func (w *headerWriter) SetData(io.Reader) error { return nil }

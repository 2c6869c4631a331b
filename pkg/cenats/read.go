package cenats

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// ErrNotCloudEvent is returned by Decode for a message without ce-specversion.
var ErrNotCloudEvent = errors.New("cenats: message carries no ce-specversion header")

var ceSpecs = spec.WithPrefix(contract.HeaderPrefix)

// Decode reads a binary-mode CloudEvent from a NATS message through sdk-go's
// binding package, the way any sdk-go based consumer does. The event's data
// is the message's Data, not a copy: change neither afterwards.
func Decode(msg *nats.Msg) (*event.Event, error) {
	if msg.Header.Get(ceSpecs.PrefixedSpecVersionName()) == "" {
		return nil, ErrNotCloudEvent
	}
	return binding.ToEvent(context.Background(), &natsMessage{msg: msg})
}

// natsMessage adapts a *nats.Msg to binding.Message in binary encoding.
type natsMessage struct {
	msg *nats.Msg
}

func (m *natsMessage) ReadEncoding() binding.Encoding { return binding.EncodingBinary }

func (m *natsMessage) ReadStructured(context.Context, binding.StructuredWriter) error {
	return binding.ErrNotStructured
}

func (m *natsMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	version := ceSpecs.Version(m.msg.Header.Get(ceSpecs.PrefixedSpecVersionName()))
	if version == nil {
		return binding.ErrUnknownEncoding
	}
	for k, vs := range m.msg.Header {
		if len(vs) == 0 {
			continue
		}
		var err error
		switch {
		case strings.HasPrefix(k, contract.HeaderPrefix):
			if attr := version.Attribute(k); attr != nil {
				err = w.SetAttribute(attr, vs[0])
			} else {
				err = w.SetExtension(strings.TrimPrefix(k, contract.HeaderPrefix), vs[0])
			}
		case strings.EqualFold(k, contract.HeaderContentType):
			err = w.SetAttribute(version.AttributeFromKind(spec.DataContentType), vs[0])
		}
		if err != nil {
			return err
		}
	}
	if len(m.msg.Data) > 0 {
		// sdk-go's event builder keeps a *bytes.Buffer's bytes as they
		// are, and copies any other reader into a buffer it grows: a
		// second copy of every payload, a third of a consumer's
		// allocations in hack/bench/fanout's heap profiles.
		return w.SetData(bytes.NewBuffer(m.msg.Data))
	}
	return nil
}

func (m *natsMessage) Finish(error) error { return nil }

// GetAttribute implements binding.MessageMetadataReader.
func (m *natsMessage) GetAttribute(k spec.Kind) (spec.Attribute, interface{}) {
	version := ceSpecs.Version(m.msg.Header.Get(ceSpecs.PrefixedSpecVersionName()))
	if version == nil {
		return nil, nil
	}
	attr := version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	if v := m.msg.Header.Get(contract.HeaderPrefix + attr.Name()); v != "" {
		return attr, v
	}
	if k == spec.DataContentType {
		if v := m.msg.Header.Get(contract.HeaderContentType); v != "" {
			return attr, v
		}
	}
	return attr, nil
}

// GetExtension implements binding.MessageMetadataReader.
func (m *natsMessage) GetExtension(name string) interface{} {
	if v := m.msg.Header.Get(contract.HeaderPrefix + name); v != "" {
		return v
	}
	return nil
}

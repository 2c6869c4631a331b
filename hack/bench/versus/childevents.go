package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// eventPublisher is the typed-publish mode's handler: every change after
// the informer's initial list is published, its object as encoding/json
// writes it, with nats.go's PublishMsgAsync to the object's subject of a
// stream set up as the bridge's; each acknowledgement counts as the mode's
// event, so the churn's measurement waits for them all. It is the floor
// of anything that stores every change in JetStream: an informer, one JSON
// document and one acknowledged publish per event, without the bridge's
// CloudEvent, old object, intake, fence and pipeline.
type eventPublisher struct {
	js       jetstream.JetStream
	subjects contract.Subjects
	typ      contract.Type
	// settled counts the acknowledgements and failures; failure is the
	// first failure.
	settled *atomic.Int64
	failure atomic.Pointer[error]
}

// startEventPublisher connects to NATS and creates the mode's stream, as
// publishRaw does, and returns the handler and its connection's close.
func startEventPublisher(ctx context.Context, b bridgeChild, settled *atomic.Int64) (*eventPublisher, func(), error) {
	cfg, subjects, err := rawStreamConfig(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	p := &eventPublisher{subjects: subjects, typ: configMapResource().Type(), settled: settled}
	nc, err := nats.Connect(b.natsURL, nats.Name("versus-typed-publish"))
	if err != nil {
		return nil, nil, err
	}
	p.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { p.settled.Add(1) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			p.fail(fmt.Errorf("publishing %s: %w", m.Subject, err))
		}))
	if err == nil {
		_, err = p.js.CreateStream(ctx, bridge.StreamConfig(cfg, subjects))
	}
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return p, nc.Close, nil
}

// fail records err if it is the first failure, and counts its publish
// as settled: the churn's wait ends, and the run fails with err.
func (p *eventPublisher) fail(err error) {
	p.failure.CompareAndSwap(nil, &err)
	p.settled.Add(1)
}

// err is the first publish that failed, if any.
func (p *eventPublisher) err() error {
	if e := p.failure.Load(); e != nil {
		return *e
	}
	return nil
}

func (p *eventPublisher) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			if !isInInitialList {
				p.publish(obj)
			}
		},
		UpdateFunc: func(_, obj interface{}) { p.publish(obj) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p.publish(obj)
		},
	}
}

// publish sends obj's JSON to its subject; its acknowledgement, or its
// failure, arrives on the JetStream's handlers.
func (p *eventPublisher) publish(obj interface{}) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		p.fail(fmt.Errorf("the informer delivered a %T", obj))
		return
	}
	data, err := json.Marshal(cm)
	if err != nil {
		p.fail(err)
		return
	}
	m := nats.NewMsg(p.subjects.Object(p.typ, cm.Namespace, cm.Name))
	m.Data = data
	if _, err := p.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
		p.fail(fmt.Errorf("publishing %s: %w", m.Subject, err))
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

// publishRaw is the publish-raw modes' work once their informer synced:
// every cached object, made into a message beforehand, published with
// nats.go's PublishMsgAsync to its own subject of a stream set up as the
// bridge's, and every acknowledgement awaited. It returns the time from
// the first publish to the last acknowledgement.
//
// publish-raw sends each object as encoding/json writes it with only a
// Nats-Msg-Id: what storing these objects costs this server on this
// machine without a bridge, the floor of the bridge's start-up snapshot.
// publish-raw-items (asItems) sends the bridge's own snapshot items
// instead, encoded by pkg/encode with their CloudEvents headers and sent
// with the fence's condition as the bridge sends them: the same messages
// without the bridge's pipeline, to tell what the contract costs the
// server from what the bridge's machinery costs.
func publishRaw(ctx context.Context, store cache.Store, b bridgeChild, asItems bool) (time.Duration, error) {
	cfg, subjects, err := rawStreamConfig(ctx, b)
	if err != nil {
		return 0, err
	}
	configMaps := configMapResource()

	cached := store.List()
	msgs := make([]*nats.Msg, 0, len(cached))
	enc := &encode.Encoder{Subjects: subjects, Term: 1}
	for _, o := range cached {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			return 0, fmt.Errorf("cache holds a %T", o)
		}
		if asItems {
			e, err := enc.EncodeWithin(informers.Change{Verb: informers.SnapshotItem, Resource: configMaps, Object: cm, SnapshotID: "raw"}, 0)
			if err != nil {
				return 0, err
			}
			// A fresh stream: every subject's last sequence is none.
			e.Msg.Header.Set(sink.HeaderExpectedLastSubjectSequence, "0")
			msgs = append(msgs, e.Msg)
			continue
		}
		data, err := json.Marshal(cm)
		if err != nil {
			return 0, err
		}
		m := nats.NewMsg(subjects.Object(configMaps.Type(), cm.Namespace, cm.Name))
		m.Header.Set(contract.HeaderMsgID, string(cm.UID)+"/"+cm.ResourceVersion)
		m.Data = data
		msgs = append(msgs, m)
	}

	js, closeConn, err := benchkit.ConnectJetStream(b.natsURL)
	if err != nil {
		return 0, err
	}
	defer closeConn()
	// The parent removed the stream of an earlier run of this mode
	// (removeStream): its ids would make these messages duplicates,
	// acknowledged without being stored.
	s, err := js.CreateStream(ctx, bridge.StreamConfig(cfg, subjects))
	if err != nil {
		return 0, err
	}
	if held := s.CachedInfo().State.Msgs; held != 0 {
		return 0, fmt.Errorf("stream %s already holds %d messages before the raw publishes", cfg.StreamName, held)
	}

	start := time.Now()
	for _, m := range msgs {
		// A full window waits for room rather than failing after nats.go's
		// default 200ms.
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			return 0, fmt.Errorf("publishing %s: %w", m.Subject, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(10 * time.Minute):
		return 0, errors.New("raw publishes unacknowledged after 10m")
	}
	took := time.Since(start)

	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs != uint64(len(msgs)) {
		return 0, fmt.Errorf("stream %s holds %d messages after %d raw publishes", cfg.StreamName, info.State.Msgs, len(msgs))
	}
	return took, nil
}

// rawStreamConfig is the configuration a bridge of b would load, and its
// subjects: a raw publisher's stream is set up as the bridge's.
func rawStreamConfig(ctx context.Context, b bridgeChild) (*config.Config, contract.Subjects, error) {
	env, err := b.env()
	if err != nil {
		return nil, contract.Subjects{}, err
	}
	cfg, err := config.Load(ctx, envconfig.MapLookuper(env))
	if err != nil {
		return nil, contract.Subjects{}, err
	}
	return cfg, contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/streamread"
)

// listState is what the API server lists in the benchmark's namespace,
// read from etcd (resourceVersion "").
func (b *bench) listState(ctx context.Context) (state, error) {
	list, err := b.cs.CoreV1().ConfigMaps(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, err
	}
	objs := make([]objectVersion, len(list.Items))
	for i, cm := range list.Items {
		objs[i] = objectVersion{key: cm.Namespace + "/" + cm.Name, rv: cm.ResourceVersion}
	}
	return stateOf(objs), nil
}

// streamState is what the bridge's stream says of the namespace's
// ConfigMaps: the last message of every object's subject, read by headers
// only, less the deletes.
func (b *bench) streamState(ctx context.Context) (state, error) {
	js, closeConn, err := b.jetStream()
	if err != nil {
		return state{}, err
	}
	defer closeConn()
	s, err := js.Stream(ctx, benchStream)
	if err != nil {
		return state{}, err
	}
	subjects := contract.Subjects{Prefix: benchPrefix, Cluster: benchCluster}
	cfg := jetstream.ConsumerConfig{
		FilterSubject: subjects.Namespace(contract.Type{Version: "v1", Resource: "configmaps"}, benchNamespace),
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:     jetstream.AckNonePolicy,
		HeadersOnly:   true,
	}
	var objs []objectVersion
	err = streamread.Read(ctx, s, cfg, streamread.Fetching{Batch: 1000, Wait: 5 * time.Second}, func(m jetstream.Msg, _ *jetstream.MsgMetadata) error {
		h := m.Headers()
		if h.Get(contract.HeaderType) == contract.TypeDeleted {
			return nil
		}
		objs = append(objs, objectVersion{
			key: h.Get(contract.Header(contract.ExtNamespace)) + "/" + h.Get(contract.Header(contract.ExtName)),
			rv:  h.Get(contract.Header(contract.ExtResourceVersion)),
		})
		return nil
	})
	return stateOf(objs), err
}

func (b *bench) jetStream() (jetstream.JetStream, func(), error) {
	return benchkit.ConnectJetStream(b.nats.ClientURL, nats.Name("kubebridge-bench-fanout"))
}

// resetStream deletes the bridge's stream, so that each stream setup's
// bridge starts on an empty one, as the first bridge of a cluster does.
func (b *bench) resetStream(ctx context.Context) error {
	js, closeConn, err := b.jetStream()
	if err != nil {
		return err
	}
	defer closeConn()
	if err := js.DeleteStream(ctx, benchStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil
}

// converge waits until every consumer holds what the API server lists
// and, in a stream setup, the stream's last message per subject says the
// same; it fails with what differs when -converge-timeout passes first.
func (b *bench) converge(ctx context.Context, s setup, cons []*consumer) error {
	want, err := b.listState(ctx)
	if err != nil {
		return err
	}
	// off is what differed at the last check that went through.
	var off []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, b.o.convergeTimeout, true, func(ctx context.Context) (bool, error) {
		var now []string
		for _, c := range cons {
			got, err := c.state(ctx)
			if err != nil {
				return false, err
			}
			if got != want {
				now = append(now, fmt.Sprintf("%s holds %v", c.name, got))
			}
		}
		if s.stream {
			got, err := b.streamState(ctx)
			if err != nil {
				return false, err
			}
			if got != want {
				now = append(now, fmt.Sprintf("the stream's last message per subject says %v", got))
			}
		}
		off = now
		return len(off) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("invalid run: %v after the churn: the API server lists %v, but %s (%w)", b.o.convergeTimeout, want, strings.Join(off, "; "), err)
	}
	what := "every consumer holds"
	if s.stream {
		what = "every consumer and the stream's last message per subject hold"
	}
	logf("valid: %s what the API server lists, %v", what, want)
	return nil
}

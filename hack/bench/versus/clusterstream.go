package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// sendMarkers makes the cluster mix's last changes, one after the other.
func (b *bench) sendMarkers(ctx context.Context, seq int) ([]marker, error) {
	var out []marker
	total := b.churn.mix.total()
	for k := total - b.markers(); k < total; k++ {
		rv, err := b.clusterChange(ctx, k, seq)
		if err != nil {
			return out, err
		}
		p := b.plan(k, seq)
		out = append(out, marker{kind: kindName(p.kind.pod()), name: nameOf(objectKey{pod: p.kind.pod(), index: p.index}), rv: rv})
	}
	return out, nil
}

func kindName(pod bool) string {
	if pod {
		return "Pod"
	}
	return "ConfigMap"
}

func nameOf(key objectKey) string {
	if key.pod {
		return podName(key.index)
	}
	return objectName(key.index)
}

// waitForCluster waits until the stream holds an updated event of every
// marker at the marker's resourceVersion, and then until a poll a second
// later finds no message more: the events of every change made before
// them, which the bridge received before the markers, are then published
// or held back. It gives up after five minutes.
func waitForCluster(ctx context.Context, url, name string, markers []marker) (streamCount, error) {
	deadline := time.Now().Add(5 * time.Minute)
	var last uint64
	for {
		sc, err := countStream(ctx, url, name)
		if err == nil && sc.holds(markers) && sc.LastSeq == last {
			return sc, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("markers %+v not all stored, or messages still arriving (last sequence %d)", markers, sc.LastSeq)
			}
			return sc, fmt.Errorf("stream %s after 5m: %w", name, err)
		}
		last = sc.LastSeq
		select {
		case <-ctx.Done():
			return sc, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// holds tells whether the stream's last updated event of every marker's
// object is at its resourceVersion.
func (sc *streamCount) holds(markers []marker) bool {
	for _, m := range markers {
		if sc.lastRV[m.kind+"/"+m.name] != m.rv {
			return false
		}
	}
	return true
}

// checkCluster checks a bridge's stream after the cluster mix: nothing but
// updated events (the rules files of +config= use no match), a bridge
// without rules publishes every change, and every meaningful change is
// there (checkMeaningful).
func (b *bench) checkCluster(ctx context.Context, m mode, sc streamCount, cp clusterPlan) error {
	items := b.objectsOf(m) + b.pods
	if sc.Items != items || sc.Added != 0 || sc.Deleted != 0 || sc.RolledUp != 0 || sc.Other != 0 {
		return fmt.Errorf("stream %s: %d snapshot items, %d added, %d deleted, %d other events, %d messages removed; want %d items and updated events only",
			streamName(m), sc.Items, sc.Added, sc.Deleted, sc.Other, sc.RolledUp, items)
	}
	if m.config == "" && sc.Changes != b.churn.mix.cluster {
		return fmt.Errorf("stream %s: updated events standing for %d changes, want all %d", streamName(m), sc.Changes, b.churn.mix.cluster)
	}
	return b.checkMeaningful(ctx, m, cp)
}

// checkMeaningful reads the last message of every object a meaningful
// change of the churn touched and checks that it holds what the object's
// last such change set: its image, version label, or data key.
func (b *bench) checkMeaningful(ctx context.Context, m mode, cp clusterPlan) error {
	js, closeConn, err := benchkit.ConnectJetStream(b.env.NATSURL())
	if err != nil {
		return err
	}
	defer closeConn()
	s, err := js.Stream(ctx, streamName(m))
	if err != nil {
		return err
	}
	subjects := contract.Subjects{Prefix: subjectPrefix(streamName(m)), Cluster: benchCluster}
	var wrong []string
	for key, fields := range cp.last {
		t := contract.Type{Version: "v1", Resource: map[bool]string{true: "pods", false: "configmaps"}[key.pod]}
		msg, err := s.GetLastMsgForSubject(ctx, subjects.Object(t, b.layout.namespace(key.index), nameOf(key)))
		if err != nil {
			return fmt.Errorf("stream %s: last message of %s: %w", streamName(m), nameOf(key), err)
		}
		got, err := publishedFields(msg.Data)
		if err != nil {
			return fmt.Errorf("stream %s: %s: %w", streamName(m), nameOf(key), err)
		}
		for f, v := range fields {
			if got[f] != v {
				wrong = append(wrong, fmt.Sprintf("%s %s=%.40q, want %.40q", nameOf(key), f, got[f], v))
			}
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("stream %s: %d meaningful changes missing, e.g. %s", streamName(m), len(wrong), strings.Join(wrong[:min(3, len(wrong))], "; "))
	}
	return nil
}

// publishedFields reads what checkMeaningful compares from an event's
// data: the first container's image, the version label, the data keys.
func publishedFields(data []byte) (map[string]string, error) {
	var d struct {
		Object *struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
			Data map[string]string `json:"data"`
		} `json:"object"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.Object == nil {
		return nil, errors.New("an event without an object")
	}
	out := map[string]string{"label": d.Object.Metadata.Labels["version"]}
	if c := d.Object.Spec.Containers; len(c) > 0 {
		out["image"] = c[0].Image
	}
	for k, v := range d.Object.Data {
		out["data/"+k] = v
	}
	return out, nil
}

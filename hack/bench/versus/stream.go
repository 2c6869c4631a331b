package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// streamCount is what the stream holds, read from the messages' headers.
type streamCount struct {
	Msgs   uint64
	Begins int
	Items  int
	Ends   int
	// Added counts the added events the stream holds, and RolledUp the
	// messages a deleted event's Nats-Rollup removed from its subject
	// (stream's last sequence − messages): in this churn, the added
	// events of the objects deleted since.
	Added    int
	RolledUp int
	Updated  int
	Deleted  int
	// Changes is the number of updates the updated events stand for:
	// each counts its ce-coalesced, or 1.
	Changes int
	// Coalesced is the number of updated events that merged several.
	Coalesced int
	Truncated int
	Other     int
	// UpdatedBytes is the total payload size of the updated events.
	UpdatedBytes int64
	// LastSeq and Bytes are the stream's state: its last sequence, and
	// the bytes it stores (headers, subjects and payloads).
	LastSeq uint64
	Bytes   uint64
	// ByKind counts the updated events and their payload bytes per kind
	// (ce-kind).
	ByKind map[string]kindCount
	// lastRV is the resourceVersion of the last updated event per
	// kind/name.
	lastRV map[string]string
}

// kindCount is the updated events of one kind and their payload bytes.
type kindCount struct {
	Events int
	Bytes  int64
}

// countStream reads every message's headers (not the payloads) from the
// stream.
func countStream(ctx context.Context, url, name string) (streamCount, error) {
	var sc streamCount
	js, closeConn, err := benchkit.ConnectJetStream(url)
	if err != nil {
		return sc, err
	}
	defer closeConn()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return sc, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return sc, err
	}
	sc.Msgs = info.State.Msgs
	sc.RolledUp = int(info.State.LastSeq - info.State.Msgs)
	sc.LastSeq, sc.Bytes = info.State.LastSeq, info.State.Bytes
	sc.ByKind, sc.lastRV = map[string]kindCount{}, map[string]string{}
	if sc.Msgs == 0 {
		return sc, nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return sc, err
	}
	it, err := cons.Messages()
	if err != nil {
		return sc, err
	}
	defer it.Stop()
	for range sc.Msgs {
		msg, err := it.Next(jetstream.NextMaxWait(30 * time.Second))
		if err != nil {
			return sc, fmt.Errorf("stream %s: reading headers: %w", name, err)
		}
		sc.count(msg.Headers())
	}
	return sc, nil
}

// count counts one message by its headers.
func (sc *streamCount) count(h nats.Header) {
	if h.Get(contract.Header(contract.ExtTruncated)) == "true" {
		sc.Truncated++
	}
	switch h.Get(contract.HeaderType) {
	case contract.TypeSnapshotBegin:
		sc.Begins++
	case contract.TypeSnapshotItem:
		sc.Items++
	case contract.TypeSnapshotEnd:
		sc.Ends++
	case contract.TypeTerm:
		// One per bridge start, before anything it publishes.
	case contract.TypeAdded:
		sc.Added++
	case contract.TypeDeleted:
		sc.Deleted++
	case contract.TypeUpdated:
		sc.Updated++
		n := 1
		if v, err := strconv.Atoi(h.Get(contract.Header(contract.ExtCoalesced))); err == nil && v > 0 {
			n = v
			sc.Coalesced++
		}
		sc.Changes += n
		if sc.ByKind == nil {
			sc.ByKind, sc.lastRV = map[string]kindCount{}, map[string]string{}
		}
		kind := h.Get(contract.Header(contract.ExtKind))
		kc := sc.ByKind[kind]
		kc.Events++
		if v, err := strconv.ParseInt(h.Get(nats.MsgSize), 10, 64); err == nil {
			sc.UpdatedBytes += v
			kc.Bytes += v
		}
		sc.ByKind[kind] = kc
		sc.lastRV[kind+"/"+h.Get(contract.Header(contract.ExtName))] = h.Get(contract.Header(contract.ExtResourceVersion))
	default:
		sc.Other++
	}
}

// waitForChurn waits until the stream holds mix's changes: an added
// event per create (or rolled up by its object's deleted event), updated events standing for every update, a deleted
// event per delete; or for five minutes.
func waitForChurn(ctx context.Context, url, name string, mix churnMix) (streamCount, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		sc, err := countStream(ctx, url, name)
		if err == nil && sc.Added+sc.RolledUp >= mix.creates && sc.Changes >= mix.updates && sc.Deleted >= mix.deletes {
			return sc, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("it holds %d added events (and %d messages rolled up), updated events standing for %d updates and %d deleted events; want %s",
					sc.Added, sc.RolledUp, sc.Changes, sc.Deleted, mix)
			}
			return sc, fmt.Errorf("stream %s after 5m: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return sc, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// removeStream deletes the stream called name if there is one, so that a
// mode listed more than once (bridge-typed,typed+nogzip,bridge-typed)
// starts each run on an empty stream, as the first did: its counts are
// its own, and publish-raw's messages are not taken for duplicates of the
// run before.
func removeStream(ctx context.Context, url, name string) error {
	js, closeConn, err := benchkit.ConnectJetStream(url)
	if err != nil {
		return err
	}
	defer closeConn()
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("deleting stream %s: %w", name, err)
	}
	return nil
}

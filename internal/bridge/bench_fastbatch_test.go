package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkRawFastBatch is BenchmarkRawPublish/file sent as one JetStream
// fast batch (nats-server 2.14+): core NATS publishes whose reply subject
// names the batch and each message's place in it. The server acknowledges
// every few hundred messages (flow control) and the batch's last with one
// PubAck, instead of each message with its own. The pair measures what the
// per-message acknowledgement costs, on both sides of the connection. The
// bridge does not publish this way: its fence needs the stream sequence
// each message was stored at (docs/performance.md).
func BenchmarkRawFastBatch(b *testing.B) {
	nc, _, stream, toSend := rawMessages(b, "file")
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	scfg := stream.CachedInfo().Config
	scfg.AllowBatchPublish = true
	if _, err := js.UpdateStream(ctx, scfg); err != nil {
		b.Fatal(err)
	}
	before := stream.CachedInfo().State.LastSeq

	// The server's replies: a flow ack ({"type":"ack","seq":N}: every
	// message up to N stored), an error or a gap, and the PubAck ending
	// the batch.
	type reply struct {
		Type  string          `json:"type"`
		Seq   uint64          `json:"seq"`
		Batch string          `json:"batch"`
		Count uint64          `json:"count"`
		Error json.RawMessage `json:"error"`
	}
	inbox := nc.NewInbox()
	id := inbox[strings.LastIndexByte(inbox, '.')+1:]
	replies := make(chan *nats.Msg, 1024)
	sub, err := nc.ChanSubscribe(inbox+".>", replies)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// window is how far the publisher may run ahead of the last flow ack:
	// twice the most the server acks at once (500).
	const flow, window = 500, 1000
	var stored uint64
	await := func() reply {
		select {
		case m := <-replies:
			var r reply
			if err := json.Unmarshal(m.Data, &r); err != nil {
				b.Fatalf("reply %q: %v", m.Data, err)
			}
			if r.Error != nil || r.Type == "gap" || r.Type == "err" {
				b.Fatalf("the batch failed: %s", m.Data)
			}
			if r.Type == "ack" {
				stored = max(stored, r.Seq)
			}
			return r
		case <-time.After(30 * time.Second):
			b.Fatal("no reply from the server in 30s")
			return reply{}
		}
	}

	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	for i, m := range toSend {
		seq := uint64(i + 1)
		for seq > stored+window {
			await()
		}
		op := 1 // append
		switch {
		case i == len(toSend)-1:
			op = 2 // commit
		case seq == 1:
			op = 0 // start
		}
		m.Reply = fmt.Sprintf("%s.%s.%d.fail.%d.%d.$FI", inbox, id, flow, seq, op)
		if err := nc.PublishMsg(m); err != nil {
			b.Fatal(err)
		}
	}
	for {
		if r := await(); r.Type == "" {
			if r.Batch != id || r.Count != uint64(b.N) {
				b.Fatalf("PubAck of batch %q with %d messages, want %q with %d", r.Batch, r.Count, id, b.N)
			}
			break
		}
	}
	reportRaw(b, stream, before, start, cpuStart)
}

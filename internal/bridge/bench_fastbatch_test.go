package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// BenchmarkRawFastBatch is BenchmarkRawPublish/file sent as one JetStream
// fast batch (nats-server 2.14+, orbit.go's jetstreamext): the server
// acknowledges every few hundred messages (flow control) and the batch's
// last with one PubAck, instead of each message with its own. The pair
// measures what the per-message acknowledgement costs, on both sides of
// the connection. The bridge does not publish this way: a fast batch tells
// neither the stream sequence each message was stored at, which its fence
// needs, nor, except in a reply the server may drop, which message it
// refused (TestFastBatchFencing in pkg/sink).
func BenchmarkRawFastBatch(b *testing.B) {
	nc, _, stream, toSend := rawMessages(b, "file", false)
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
	var failed []error
	fp, err := jetstreamext.NewFastPublisher(js, jetstreamext.WithFastPublisherErrorHandler(func(err error) { failed = append(failed, err) }))
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	for _, m := range toSend[:len(toSend)-1] {
		if _, err := fp.AddMsg(m); err != nil {
			b.Fatal(err)
		}
	}
	ack, err := fp.CommitMsg(ctx, toSend[len(toSend)-1])
	if err != nil {
		b.Fatal(err)
	}
	if len(failed) > 0 || ack.BatchSize != uint64(b.N) {
		b.Fatalf("the batch stored %d of %d messages; the server reported %v", ack.BatchSize, b.N, failed)
	}
	reportRaw(b, stream, before, start, cpuStart)
}

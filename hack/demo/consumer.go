package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebridge/kubebridge/pkg/cenats"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// subscribe connects to the bridge's NATS server once it is up and reads
// the stream from its first message with an ordered consumer, so nothing
// published before the connection is missed.
func (d *demo) subscribe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, bridgeStart)
	defer cancel()
	var stream jetstream.Stream
	for {
		if err := d.bridgeExited(); err != nil {
			return err
		}
		var err error
		if d.nc == nil {
			d.nc, err = nats.Connect(d.natsURL, nats.Name("kubebridge-demo"), nats.Timeout(time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond))
			if err != nil {
				d.nc = nil
			}
		}
		if d.nc != nil {
			var js jetstream.JetStream
			if js, err = jetstream.New(d.nc); err == nil {
				if stream, err = js.Stream(ctx, streamName); err == nil {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("NATS at %s or stream %s not available: %v (last error: %v)", d.natsURL, streamName, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return err
	}
	d.say("--- reading stream %s (filter %s) from its first message with a JetStream ordered consumer,", streamName, filter)
	d.say("    one line per event: stream seq, ce-type, ce-kind, ce-subject (markers: the NATS subject), ce-resourceversion")
	d.consume, err = cons.Consume(d.onMessage, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		d.mu.Lock()
		quiet := d.stopping
		d.mu.Unlock()
		if !quiet {
			d.say("    (consumer: %v)", err)
		}
	}))
	return err
}

// onMessage prints one compact line per event, and the first update in full.
func (d *demo) onMessage(m jetstream.Msg) {
	msg := &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
	var seq uint64
	if meta, err := m.Metadata(); err == nil {
		seq = meta.Sequence.Stream
	}
	ev, err := cenats.Decode(msg)
	if err != nil {
		d.say("    #%-4d %s: not a CloudEvent: %v", seq, m.Subject(), err)
		return
	}
	ext := func(name string) string { s, _ := ev.Extensions()[name].(string); return s }
	typ := strings.TrimPrefix(strings.TrimPrefix(ev.Type(), "io.kubebridge.object."), "io.kubebridge.")

	var line string
	switch ev.Type() {
	case contract.TypeTerm:
		line = fmt.Sprintf("#%-4d %-15s %-10s %s  (every event after it carries term=%d)", seq, typ, "", ev.Subject(), seq)
	case contract.TypeSnapshotBegin, contract.TypeSnapshotEnd:
		line = fmt.Sprintf("#%-4d %-15s %-10s %s", seq, typ, ext(contract.ExtKind), m.Subject())
		if ev.Type() == contract.TypeSnapshotEnd {
			line += "  count=" + ext(contract.ExtSnapshotCount)
		}
	default:
		line = fmt.Sprintf("#%-4d %-15s %-10s %-26s rv=%s", seq, typ, ext(contract.ExtKind), ev.Subject(), ext(contract.ExtResourceVersion))
		if ev.Type() == contract.TypeUpdated {
			var data struct {
				Old struct {
					Metadata struct {
						ResourceVersion string `json:"resourceVersion"`
					} `json:"metadata"`
				} `json:"oldObject"`
			}
			if json.Unmarshal(ev.Data(), &data) == nil {
				line += " (old rv=" + data.Old.Metadata.ResourceVersion + ")"
			}
		}
		if ext(contract.ExtFinalStateUnknown) == "true" {
			line += " finalstateunknown"
		}
	}
	d.mu.Lock()
	d.received++
	fmt.Println("    " + line)
	if ev.Type() == contract.TypeUpdated && !d.shownOne {
		d.shownOne = true
		fmt.Print(fullMessage(msg))
	}
	d.mu.Unlock()

	select {
	case d.events <- seen{typ: typ, kind: ext(contract.ExtKind), subject: m.Subject()}:
	default: // nobody is waiting (make demo-up)
	}
}

// fullMessage renders a message as it travels: subject, every header, and
// the data (pretty-printed).
func fullMessage(msg *nats.Msg) string {
	var b strings.Builder
	b.WriteString("\n      ┌─ this event in full: the NATS subject, every header (ce-* are the CloudEvent's attributes) and the data\n")
	fmt.Fprintf(&b, "      │ subject: %s\n", msg.Subject)
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(&b, "      │ %s: %s\n", k, v)
		}
	}
	b.WriteString("      │\n")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, msg.Data, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(msg.Data)
	}
	for _, l := range strings.Split(strings.TrimRight(pretty.String(), "\n"), "\n") {
		fmt.Fprintf(&b, "      │ %s\n", l)
	}
	b.WriteString("      └─\n\n")
	return b.String()
}

// waitFor reads events until match returns true.
func (d *demo) waitFor(ctx context.Context, timeout time.Duration, what string, match func(seen) bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case s := <-d.events:
			if match(s) {
				return nil
			}
		case <-d.bridgeDone:
			return d.bridgeExited()
		case <-t.C:
			return fmt.Errorf("no %s event within %v; bridge log: %s", what, timeout, d.bridgeLog.Name())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Command fencecost measures what the fence's condition costs JetStream as
// the stream grows: the time from a publish to its acknowledgement, and
// the CPU of this process (nats.go and an in-process nats-server
// together), for updates to subjects whose last message is old, with and
// without Nats-Expected-Last-Subject-Sequence.
//
// For that header nats-server v2.15.2 loads the subject's last
// message (store.LoadLastMsg in processJetStreamMsg), which in a file
// store reads the message's whole block unless it is cached; v2.15.3
// reads the sequence alone (store.LoadLastSeq). One run is one process:
//
//	go run ./hack/bench/fencecost -objects 100000 -fenced=true
//	go run ./hack/bench/fencecost -objects 100000 -fenced=false
//
// It preloads -objects subjects with one message each, as a start-up
// snapshot leaves the stream, waits, then publishes -updates messages to
// subjects spread over the whole key space at -rate per second, as a
// churn of updates does. To measure v2.15.2, build it with the module
// versions of the commit before kubebridge moved to v2.15.3:
//
//	git show 95c5d06:go.mod > /tmp/v2152.mod && git show 95c5d06:go.sum > /tmp/v2152.sum
//	go build -modfile=/tmp/v2152.mod -o /tmp/fencecost-2152 ./hack/bench/fencecost
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/sink"
)

func main() {
	objects := flag.Int("objects", 20000, "subjects preloaded with one message each")
	updates := flag.Int("updates", 3000, "updates measured, each to a different preloaded subject")
	rate := flag.Float64("rate", 1500, "updates per second")
	size := flag.Int("size", 2500, "payload bytes per message")
	fenced := flag.Bool("fenced", true, "send each update with Nats-Expected-Last-Subject-Sequence, as the bridge does")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the updates here")
	flag.Parse()
	if *updates > *objects {
		fmt.Fprintln(os.Stderr, "fencecost: -updates must not exceed -objects: each goes to its own subject")
		os.Exit(2)
	}
	if err := run(context.Background(), *objects, *updates, *rate, *size, *fenced, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "fencecost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, objects, updates int, rate float64, size int, fenced bool, cpuProfile string) error {
	// The server the bridge embeds.
	js, stopNATS, err := benchkit.StartJetStream(jetstream.WithPublishAsyncMaxPending(4000))
	if err != nil {
		return err
	}
	defer stopNATS()

	// The stream as the bridge sets it up with its defaults.
	cfg, err := config.Load(ctx, envconfig.MapLookuper(map[string]string{"BRIDGE_RESOURCES": "configmaps"}))
	if err != nil {
		return err
	}
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	stream, err := js.CreateStream(ctx, bridge.StreamConfig(cfg, subjects))
	if err != nil {
		return err
	}
	b := &bench{js: js, subjects: subjects, payload: []byte(strings.Repeat("x", size))}

	last, err := b.preload(objects)
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second)

	stopProfile, err := benchkit.StartCPUProfile(cpuProfile)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopProfile(); err != nil {
			fmt.Fprintln(os.Stderr, "fencecost: CPU profile:", err)
		}
	}()
	cpuBefore := cpuSeconds()
	latencies, err := b.update(last, updates, rate, fenced)
	if err != nil {
		return err
	}
	cpu := cpuSeconds() - cpuBefore

	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	if want := uint64(objects + updates); info.State.Msgs != want {
		return fmt.Errorf("the stream holds %d messages, want %d", info.State.Msgs, want)
	}
	report(objects, updates, fenced, latencies, cpu)
	return nil
}

// bench publishes to the stream the bridge sets up.
type bench struct {
	js       jetstream.JetStream
	subjects contract.Subjects
	payload  []byte
}

// subject is the subject of object i.
func (b *bench) subject(i int) string {
	return b.subjects.Object(contract.Type{Version: "v1", Resource: "configmaps"}, "bench", "cm-"+strconv.Itoa(i))
}

// preload publishes one message to each of objects subjects and returns
// each one's sequence: every subject's last message is then in the
// blocks written before the updates start.
func (b *bench) preload(objects int) ([]uint64, error) {
	last := make([]uint64, objects)
	futures := make([]jetstream.PubAckFuture, objects)
	for i := range objects {
		m := nats.NewMsg(b.subject(i))
		m.Header.Set(contract.HeaderMsgID, "preload-"+strconv.Itoa(i))
		m.Data = b.payload
		var err error
		if futures[i], err = b.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			return nil, fmt.Errorf("preloading %s: %w", m.Subject, err)
		}
	}
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			last[i] = ack.Sequence
		case err := <-f.Err():
			return nil, fmt.Errorf("preloading %s: %w", b.subject(i), err)
		}
	}
	return last, nil
}

// update publishes updates messages at rate per second, each to another
// preloaded subject, fenced on its last sequence if fenced is set, and
// returns the time each took to be acknowledged.
func (b *bench) update(last []uint64, updates int, rate float64, fenced bool) ([]time.Duration, error) {
	objects := len(last)
	// Each acknowledgement is timed where it arrives, by a goroutine of
	// its own, not when a loop reaches it.
	latencies := make([]time.Duration, updates)
	failures := make([]error, updates)
	var acked sync.WaitGroup
	// A stride coprime with -objects visits distinct subjects spread over
	// the whole stream, so most updates land in a block other than the
	// previous one's.
	stride := 7919
	for gcd(stride, objects) != 1 {
		stride++
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for k := range updates {
		<-tick.C
		i := (k * stride) % objects
		m := nats.NewMsg(b.subject(i))
		m.Header.Set(contract.HeaderMsgID, "update-"+strconv.Itoa(k))
		if fenced {
			m.Header.Set(sink.HeaderExpectedLastSubjectSequence, strconv.FormatUint(last[i], 10))
		}
		m.Data = b.payload
		at := time.Now()
		f, err := b.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute))
		if err != nil {
			return nil, fmt.Errorf("updating %s: %w", m.Subject, err)
		}
		acked.Go(func() {
			select {
			case <-f.Ok():
				latencies[k] = time.Since(at)
			case failures[k] = <-f.Err():
			}
		})
	}
	acked.Wait()
	if err := errors.Join(failures...); err != nil {
		return nil, fmt.Errorf("updates refused: %w", err)
	}
	return latencies, nil
}

// report prints one line.
func report(objects, updates int, fenced bool, latencies []time.Duration, cpu float64) {
	var sum time.Duration
	for _, l := range latencies {
		sum += l
	}
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("objects=%d fenced=%t updates=%d: acknowledgement mean %.2f ms, p50 %.2f ms, p99 %.2f ms; CPU %.1f ms per 1,000 updates\n",
		objects, fenced, updates, ms(sum/time.Duration(updates)), ms(latencies[updates/2]), ms(latencies[updates*99/100]), cpu*1e6/float64(updates))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// cpuSeconds is this process's user and system CPU so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

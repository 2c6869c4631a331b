// Command storagecost measures what keeping several messages per object
// costs JetStream, by the stream's storage: the CPU of this process
// (nats.go and an in-process nats-server together) per update once every
// object has its limit of messages, for the bridge's stream as it creates
// it (BRIDGE_STREAM_STORAGE, BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT).
//
// Each setup gets a fresh stream holding one message on a subject of its
// own first, as a term marker or an object that never changes keeps the
// stream's first sequence put; then -objects subjects are updated in turn,
// round after round, and the rounds after each subject is at its limit are
// measured. The setups run alternated, -pairs times, in one process:
//
//	go run ./hack/bench/storagecost -objects 20000
//
// nats-server 2.15's memory store, past a subject's limit, finds the
// subject's next-oldest message by reading every sequence up from the one
// it removed (memStore.recalculateForSubj) unless the stream's first
// sequence is past them, so there an update costs in proportion to the
// objects updated between two of one object's updates; with one message
// per subject, or in a file store, it does not.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sethvargo/go-envconfig"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/bridge"
	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// setup is one stream configuration measured.
type setup struct {
	storage string
	perSubj int
}

func (s setup) String() string { return fmt.Sprintf("%s, %d per subject", s.storage, s.perSubj) }

func main() {
	objects := flag.Int("objects", 20000, "subjects updated in turn")
	rounds := flag.Int("rounds", 3, "rounds of updates measured once every subject is at its limit")
	pairs := flag.Int("pairs", 2, "times each setup runs, alternated")
	size := flag.Int("size", 2048, "payload bytes per message")
	flag.Parse()
	if err := run(context.Background(), *objects, *rounds, *pairs, *size); err != nil {
		fmt.Fprintln(os.Stderr, "storagecost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, objects, rounds, pairs, size int) error {
	js, stop, err := benchkit.StartJetStream(jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		return err
	}
	defer stop()
	setups := []setup{{"file", 8}, {"memory", 8}, {"memory", 1}}
	payload := []byte(strings.Repeat("x", size))
	fmt.Printf("%d objects updated in turn, %d-byte messages, %d measured rounds; µs of this process's CPU per update (client and server)\n\n", objects, size, rounds)
	fmt.Println("| setup | µs per update, by run | ÷ file, 8 per subject, same pair |")
	fmt.Println("|---|---|---|")
	results := make(map[setup][]float64)
	for range pairs {
		for _, s := range setups {
			us, err := measure(ctx, js, s, objects, rounds, payload)
			if err != nil {
				return fmt.Errorf("%v: %w", s, err)
			}
			results[s] = append(results[s], us)
		}
	}
	for _, s := range setups {
		var runs, ratios []string
		for i, us := range results[s] {
			runs = append(runs, strconv.FormatFloat(us, 'f', 1, 64))
			ratios = append(ratios, strconv.FormatFloat(us/results[setups[0]][i], 'f', 2, 64))
		}
		fmt.Printf("| %v | %s | %s |\n", s, strings.Join(runs, ", "), strings.Join(ratios, ", "))
	}
	return nil
}

// measure creates the bridge's stream for s, stores the message that stays
// below every object's, fills each object's subject to its limit and
// returns the CPU per update over the rounds after that.
func measure(ctx context.Context, js jetstream.JetStream, s setup, objects, rounds int, payload []byte) (float64, error) {
	cfg, err := config.Load(ctx, envconfig.MapLookuper(map[string]string{
		"BRIDGE_RESOURCES":                   "configmaps",
		"BRIDGE_STREAM_STORAGE":              s.storage,
		"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": strconv.Itoa(s.perSubj),
	}))
	if err != nil {
		return 0, err
	}
	subjects := contract.Subjects{Prefix: cfg.SubjectPrefix, Cluster: cfg.ClusterName}
	configMaps := contract.Type{Version: "v1", Resource: "configmaps"}
	if err := js.DeleteStream(ctx, cfg.StreamName); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, err
	}
	stream, err := js.CreateStream(ctx, bridge.StreamConfig(cfg, subjects))
	if err != nil {
		return 0, err
	}
	if _, err := js.Publish(ctx, subjects.Object(configMaps, "kube-system", "unchanging"), payload); err != nil {
		return 0, err
	}
	round := func() error {
		for i := range objects {
			if _, err := js.PublishAsync(subjects.Object(configMaps, "default", "cm-"+strconv.Itoa(i)), payload, jetstream.WithStallWait(time.Minute)); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-time.After(10 * time.Minute):
			return fmt.Errorf("a round's publishes unacknowledged after 10m")
		}
	}
	for range s.perSubj {
		if err := round(); err != nil {
			return 0, err
		}
	}
	before, err := benchkit.ProcessCPUSeconds(os.Getpid())
	if err != nil {
		return 0, err
	}
	for range rounds {
		if err := round(); err != nil {
			return 0, err
		}
	}
	after, err := benchkit.ProcessCPUSeconds(os.Getpid())
	if err != nil {
		return 0, err
	}
	us := (after - before) * 1e6 / float64(rounds*objects)
	// Every publish stored, and each object at its limit: otherwise the
	// run measured something else.
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	sent := uint64(1 + objects*(s.perSubj+rounds))
	if held := uint64(1 + objects*s.perSubj); info.State.LastSeq != sent || info.State.Msgs != held {
		return 0, fmt.Errorf("the stream's last sequence is %d and it holds %d messages, want %d and %d", info.State.LastSeq, info.State.Msgs, sent, held)
	}
	return us, nil
}

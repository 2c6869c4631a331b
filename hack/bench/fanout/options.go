package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/pkg/consume"
)

type options struct {
	objects, size int
	// consumers is -consumers: the K of the setups besides K = 0, sorted.
	consumers    []int
	churn        int
	churnRate    float64
	churnWorkers int
	// workers create the objects before the setups.
	workers int
	// newAfter is how far into the churn the new consumer starts.
	newAfter time.Duration
	// quietCores and quietTimeout: before the window opens, the measured
	// processes together use less than quietCores of CPU, or quietTimeout
	// passed.
	quietCores   float64
	quietTimeout time.Duration
	// syncTimeout bounds a consumer's sync and the bridge's start;
	// convergeTimeout the wait for the consumers (and the stream) to hold
	// what the API server lists after the churn.
	syncTimeout, convergeTimeout time.Duration
	bridgeBin, natsBin           string
	// heapProfiles is -heapprofile: where each consumer writes its heap
	// profile as it ends ("" for none).
	heapProfiles string
	// natsProfiles is -nats-cpuprofile: where nats-server's CPU profile
	// over each stream setup's churn is written ("" for none).
	natsProfiles string
	// bootstrap is -bootstrap: how a stream consumer bootstraps.
	bootstrap string
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.IntVar(&o.objects, "objects", 20000, "ConfigMaps created before the setups")
	fs.IntVar(&o.size, "size", 2048, "bytes of data per ConfigMap")
	consumers := fs.String("consumers", "1,5,20", "the K of the setups, comma-separated (K = 0 always runs)")
	fs.IntVar(&o.churn, "churn", 3000, "changes per setup: a third creates, then a third updates, then a third deletes")
	fs.Float64Var(&o.churnRate, "churn-rate", 100, "changes per second")
	fs.IntVar(&o.churnWorkers, "churn-workers", 8, "goroutines making the changes")
	fs.IntVar(&o.workers, "workers", 16, "goroutines creating the ConfigMaps")
	fs.DurationVar(&o.newAfter, "new-after", 0, "how far into the churn the new consumer starts (default: a third of the churn)")
	fs.Float64Var(&o.quietCores, "quiet-cores", 0.2, "before the churn, wait until the measured processes together use less CPU than this many cores over a second")
	fs.DurationVar(&o.quietTimeout, "quiet-timeout", 2*time.Minute, "longest wait for -quiet-cores; the churn starts anyway after it")
	fs.DurationVar(&o.syncTimeout, "sync-timeout", 10*time.Minute, "longest wait for a consumer's cache or the bridge's start-up snapshot")
	fs.DurationVar(&o.convergeTimeout, "converge-timeout", 5*time.Minute, "longest wait, after the churn, for every consumer to hold what the API server lists")
	fs.StringVar(&o.bridgeBin, "bridge", "", "bridge binary (default: build ./cmd/bridge)")
	fs.StringVar(&o.natsBin, "nats-server", "", "nats-server binary (default: build the module's)")
	fs.StringVar(&o.bootstrap, "bootstrap", "full-replay", "how a stream consumer bootstraps: full-replay (pkg/consume's default) or last-per-subject")
	fs.StringVar(&o.heapProfiles, "heapprofile", "", "a directory where every consumer writes <setup>-<consumer>.pprof, its heap after a GC as it ends, for `go tool pprof -sample_index=inuse_space`")
	fs.StringVar(&o.natsProfiles, "nats-cpuprofile", "", "a directory where nats-server's CPU profile over each stream setup's churn is written, as <setup>-nats-server.pprof (nats-server's prof_port)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if _, err := bootstrapMode(o.bootstrap); err != nil {
		return o, err
	}
	var err error
	if o.consumers, err = parseConsumers(*consumers); err != nil {
		return o, err
	}
	if o.objects < 1 || o.size < benchkit.DataKeys || o.churn < 3 || o.churnRate <= 0 || o.churnWorkers < 1 || o.workers < 1 {
		return o, fmt.Errorf("-objects must be at least 1, -size at least %d, -churn at least 3, -churn-rate above 0, the workers at least 1", benchkit.DataKeys)
	}
	if o.newAfter == 0 {
		o.newAfter = time.Duration(float64(o.churn) / o.churnRate / 3 * float64(time.Second))
	}
	return o, nil
}

// parseConsumers reads -consumers: distinct positive counts, returned in
// increasing order.
func parseConsumers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("-consumers: %q is not a count of at least 1", f)
		}
		if slices.Contains(out, k) {
			return nil, fmt.Errorf("-consumers: %d listed twice", k)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("-consumers: none")
	}
	slices.Sort(out)
	return out, nil
}

// bootstrapMode reads -bootstrap.
func bootstrapMode(s string) (consume.BootstrapMode, error) {
	switch s {
	case "last-per-subject":
		return consume.LastPerSubject, nil
	case "full-replay":
		return consume.FullReplay, nil
	}
	return 0, fmt.Errorf("-bootstrap %q: want last-per-subject or full-replay", s)
}

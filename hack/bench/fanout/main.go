// Command fanout measures what the bridge saves the API server: K
// consumers that each run an informer on the API server, against one
// bridge and K consumers that each run an informer on its stream (issue
// 36). Issue 36's run:
//
//	KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh) nice -n 10 go run ./hack/bench/fanout \
//		-objects 20000 -consumers 1,5,20 -churn 3000 -churn-rate 100
//
// The parent starts a real etcd and kube-apiserver and a nats-server
// process (internal/testenv), builds the bridge (cmd/bridge, or -bridge),
// and creates -objects ConfigMaps of -size bytes in one namespace, plus a
// marker ConfigMap. Then, for K = 0, each K of -consumers and K = 0 again
// (the baselines run first and last, and the goals take their mean, so
// that a machine or an API server whose speed drifts during the run
// counts on both sides), it runs two setups, each over the same churn:
//
//   - (a) K consumer processes, each a client-go shared informer of the
//     namespace's ConfigMaps on the API server, as client-go sets one up
//     (JSON, its defaults; managed fields kept);
//   - (b) the bridge binary, on an empty stream, and K consumer
//     processes, each a shared informer over pkg/consume's ListWatch on
//     the stream (bootstrap from the last message per subject).
//
// Before the first setup the churn runs once unmeasured, so that what the
// API server and etcd do the first time is in no window.
//
// A consumer is this program run again ("fanout child informer|stream").
// Once the bridge is ready, every consumer synced and the processes
// measured together use less than -quiet-cores of CPU (their start-up's
// lists, bootstraps and collections done; at most -quiet-timeout), the
// window opens: the churn makes -churn changes at -churn-rate per second
// from -churn-workers writers, a third creates of new ConfigMaps, then a
// third updates (one data key of a preloaded ConfigMap rewritten, round
// robin), then a third deletes of the created ones, as hack/bench/versus
// makes them, and last it sets the marker to the setup's token.
// -new-after into the churn (a third of it by default) a new consumer of
// the setup's source starts. The window closes once every consumer, the
// new one too, has seen the marker.
//
// The run fails (exit 1, "invalid run: ...") unless every consumer synced
// (the K with exactly the objects the API server lists) and, after the
// window, every consumer's cache holds exactly what the API server lists
// (the same objects at the same resourceVersions: count and digest) and,
// in (b), so does the stream's last message per subject, all within
// -converge-timeout.
//
// It prints a markdown table per K (the baselines, K = 0, first: both
// runs of each), a row per setup. Its columns, all over the window:
//
//   - window s: the window's length.
//   - apiserver+etcd CPU s: kube-apiserver's and etcd's user and system
//     CPU (/proc/<pid>/stat), together and each.
//   - nats-server CPU s, bridge CPU s: the same, of nats-server and of the
//     bridge.
//   - CPU s per consumer: the mean over the K consumers, and the largest.
//   - RSS MiB per consumer: the mean over the K consumers of each one's
//     mean resident set (VmRSS, sampled every 500 ms), and the largest
//     sample of any.
//   - new consumer synced in s: the new consumer's time from its process
//     start to its cache synced: an informer's list, or the stream's
//     bootstrap. It is not among the K.
//   - apiserver, etcd, nats-server, bridge RSS MiB: each one's mean
//     resident set, and its largest sample.
//   - before the window, the K's start: the CPU the API server and etcd
//     together, and nats-server, spent from the K consumers' start until
//     the processes were quiet: K lists from the API server, or K
//     bootstraps from the stream. (Not a goal of the issue; what the
//     window leaves out.)
//
// Then the goals, each a ratio with its verdict (PASS, FAIL; n/a when
// the denominator is not above zero):
//
//  1. at the largest K: the API server's and etcd's CPU with the bridge
//     and K stream consumers ÷ with the bridge alone (K = 0), at most
//     1.3; shown with it for scale, the same for K informers ÷ no
//     consumer at all;
//  2. at each K: the new consumer's time to synced cache over the stream ÷
//     over the API server, at most 1;
//  3. at each K: the stream consumers' RSS ÷ the informers' (the mean of
//     the K consumers' means), at most 1.1;
//  4. at each K: nats-server's CPU per stream consumer, (nats-server(b, K)
//     − nats-server(b, 0)) ÷ K, ÷ the API server's and etcd's CPU per
//     informer, (apiserver+etcd(a, K) − apiserver+etcd(a, 0)) ÷ K, at
//     most 1. The K = 0 setups start a new consumer too: its cost cancels.
//
// Any BRIDGE_* variable of the environment reaches the bridge. The
// machine's other load counts in every column: run it on a quiet machine,
// and compare ratios within one run.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// The benchmark's namespace, the bridge's names of the cluster, subjects
// and stream, and the labels of its objects.
const (
	benchNamespace = "bench-fanout"
	benchCluster   = "bench"
	benchPrefix    = "fanout"
	benchStream    = "FANOUT"
	// markerName is the ConfigMap the churn changes last, to markerKey =
	// the setup's token.
	markerName = "fanout-marker"
	markerKey  = "setup"
)

// benchLabels are the labels of every object the benchmark makes.
func benchLabels() map[string]string { return map[string]string{"app": "bench-fanout"} }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "fanout child: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "fanout: %v\n", err)
		os.Exit(1)
	}
}

func parent(args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := startBench(ctx, o)
	if err != nil {
		return err
	}
	defer b.close()
	all := setups(o.consumers)
	// Unmeasured: what the API server and etcd do the first time (the
	// first run of the churn cost them a third more than the last in a
	// run without it) is not in the first baseline.
	logf("==== warm-up: the churn, unmeasured")
	if err := b.runChurn(ctx, setup{seq: len(all)}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	var outs []outcome
	for _, s := range all {
		out, err := b.runSetup(ctx, s)
		if err != nil {
			return fmt.Errorf("%v: %w", s, err)
		}
		outs = append(outs, out)
	}
	printReport(os.Stdout, b.head(), outs)
	return nil
}

// head is the report's first lines: what ran, on what.
func (b *bench) head() string {
	o := b.o
	return fmt.Sprintf("### fanout: %d ConfigMaps of %d bytes; per setup a churn of %d changes (%v) at %.0f/s from %d writers, the new consumer %v into it\n\n"+
		"kube-apiserver %s, nats-server %s, %s, %d CPUs.",
		o.objects, o.size, o.churn, planChurn(o.churn), o.churnRate, o.churnWorkers, o.newAfter.Round(time.Millisecond),
		b.serverVersion, b.natsVersion, runtime.Version(), runtime.NumCPU())
}

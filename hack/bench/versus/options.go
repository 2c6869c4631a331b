package main

import (
	"errors"
	"flag"
	"time"
)

// options are the parent's flags.
type options struct {
	objects, size, workers int
	modes                  string
	settle, scrapeEvery    time.Duration
	profiles, cpuProfiles  string
	memLimit               string
	churn                  int
	mixKinds               string
	churnRate              float64
	churnWorkers           int
	outage, outageAfter    time.Duration
	maxPayload, namespaces int
	gate, named            bool
	// cborServer is -cbor-server: the apiserver serves CBOR (KEP-4222).
	cborServer bool
	// pods and meaningful are the cluster workload's (cluster.go).
	pods       int
	meaningful float64
}

func parseOptions() (options, error) {
	var o options
	flag.IntVar(&o.objects, "objects", 20000, "number of ConfigMaps to create and cache")
	flag.IntVar(&o.size, "size", 2048, "bytes of data per ConfigMap (split over 4 keys)")
	flag.StringVar(&o.modes, "modes", "", "comma-separated modes to run (default all: "+modeNames()+"); bridge modes take a publish buffer suffix, e.g. bridge-typed@8Mi")
	flag.IntVar(&o.workers, "workers", 16, "goroutines creating ConfigMaps")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "how long each child sleeps after runtime.GC() before measuring")
	flag.DurationVar(&o.scrapeEvery, "scrape-interval", 15*time.Second, "how often a bridge child reads its /metrics for the pending and publish buffer peaks (a Prometheus scrape's cost, in the CPU measured); 200ms was the fixed rate before")
	flag.StringVar(&o.profiles, "heapprofile", "", "if set, a directory where each child writes <mode>.pprof (heap, after the last measurement) and <mode>-peak.pprof (at the peak of its live heap), and <mode>-<phase>-size-classes.txt at each measurement (live and allocated objects per size class)")
	flag.StringVar(&o.cpuProfiles, "cpuprofile", "", "a directory where each child writes <mode>-ready-cpu.pprof, a CPU profile from its start to ready (the cache sync; for the bridge, the start-up snapshot stored), and with -churn <mode>-churn-cpu.pprof, one of the churn, from the end of its ready measurement to the last update seen")
	flag.StringVar(&o.memLimit, "child-gomemlimit", "", "GOMEMLIMIT of every child, e.g. 256MiB (the deployment sets the pod's memory limit); empty leaves it unset")
	flag.IntVar(&o.churn, "churn", 0, "after each child is ready, make this many changes (see -churn-mix) and measure again")
	flag.StringVar(&o.mixKinds, "churn-mix", "update", "the kinds of change -churn makes, a comma-separated subset of create,update,delete, made in equal parts and in that order (delete removes what create made, so every mode starts on the same objects); or cluster alone: kubelet status patches on the Pods and heartbeat renewals on Pods and ConfigMaps, and -meaningful of the changes a spec, label or data change (see cluster.go)")
	flag.IntVar(&o.pods, "pods", 0, "Pods to create besides the ConfigMaps, in the same namespaces, with a kubelet's status (they never run); the bridge modes then watch pods too, and only unsharded bridge modes can run")
	flag.Float64Var(&o.meaningful, "meaningful", 0.05, "with -churn-mix cluster, the fraction of changes that change a Pod's image or label, or a ConfigMap's data or label; the others are status and heartbeat changes")
	flag.Float64Var(&o.churnRate, "churn-rate", 10, "changes per second during -churn")
	flag.IntVar(&o.churnWorkers, "churn-workers", 4, "goroutines sending the -churn changes")
	flag.DurationVar(&o.outage, "nats-outage", 0, "during -churn, stop the NATS server for this long")
	flag.DurationVar(&o.outageAfter, "outage-after", 2*time.Second, "how far into -churn the NATS outage starts")
	flag.IntVar(&o.maxPayload, "nats-max-payload", 0, "NATS server max_payload in bytes; 0 keeps the server's default (1 MiB)")
	flag.IntVar(&o.namespaces, "namespaces", 1, "spread the objects over this many namespaces (object i in namespace i mod N); informer modes then watch all namespaces with a label selector")
	flag.BoolVar(&o.gate, "sharded-watch", false, "run the apiserver with the ShardedListAndWatch feature gate (KEP-5866): bridge shards' watches of every namespace are then filtered by the apiserver")
	flag.BoolVar(&o.cborServer, "cbor-server", false, "run the apiserver with the CBORServingAndStorage feature gate (KEP-4222), so that a mode+cbor child's dynamic client gets CBOR")
	flag.BoolVar(&o.named, "named-namespaces", false, "with -namespaces N, bridge modes name the N namespaces (BRIDGE_NAMESPACES), each getting its own watch (a shard only its own), instead of watching every namespace with the benchmark's label")
	flag.Parse()
	switch {
	case o.objects < 1 || o.size < 4:
		return o, errors.New("-objects must be >= 1 and -size >= 4")
	case o.churn < 0 || o.churnRate <= 0 || o.churnWorkers < 1:
		return o, errors.New("-churn must be >= 0, -churn-rate > 0 and -churn-workers >= 1")
	case o.namespaces < 1:
		return o, errors.New("-namespaces must be >= 1")
	case o.pods < 0 || o.meaningful < 0 || o.meaningful > 1:
		return o, errors.New("-pods must be >= 0 and -meaningful between 0 and 1")
	}
	return o, nil
}

package main

// result is what a child reports, as one JSON line on stdout per
// measurement.
type result struct {
	Mode string `json:"mode"`
	// Phase is "ready" (after the cache synced or the start-up snapshot
	// was stored) or "churn" (after the child saw every update).
	Phase string `json:"phase"`
	// Gzip is whether the child asked the API server for gzip.
	Gzip      bool    `json:"gzip"`
	Objects   int     `json:"objects"` // objects in the cache; -1 if the child cannot see it (bridge)
	VmRSSKiB  int64   `json:"vmRSSKiB"`
	VmHWMKiB  int64   `json:"vmHWMKiB"`
	FreedRSS  int64   `json:"rssAfterFreeOSMemoryKiB"`
	HeapInuse uint64  `json:"heapInuse"`
	HeapAlloc uint64  `json:"heapAlloc"`
	HeapSys   uint64  `json:"heapSys"`
	Sys       uint64  `json:"sys"`
	NumGC     uint32  `json:"numGC"`
	ReadySecs float64 `json:"readySeconds"`
	bridgeTotals
	GoVersion  string `json:"goVersion"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOGC       string `json:"gogc"`
	GOMEMLIMIT string `json:"gomemlimit"`
	// Sampled every 200ms since the child started, so they can miss a
	// short peak; VmHWM cannot.
	MaxHeapAlloc uint64 `json:"maxHeapAlloc"`
	MaxHeapInuse uint64 `json:"maxHeapInuse"`
	// MaxLiveHeap is the largest heap the GC found live (marked): what
	// has to fit under a memory limit, whatever the GC's pacing.
	MaxLiveHeap uint64 `json:"maxLiveHeap"`
	// The bridge's kubebridge_pending_objects and
	// kubebridge_publish_buffer_bytes, sampled likewise.
	MaxPending     int64 `json:"maxPendingObjects"`
	MaxBufferBytes int64 `json:"maxPublishBufferBytes"`
	// Events is how many notifications (add, update, delete) the informer
	// delivered after its initial list.
	Events int64 `json:"events"`
	// Start and End are what the process had used when the measurement
	// began and when it ended: what a churn cost is churn.Start minus
	// ready.End, without the collections a measurement forces.
	Start usage `json:"start"`
	End   usage `json:"end"`
}

// churnUsage is what rn's child used over the churn: from the end of its
// ready measurement to the start of its churn measurement.
func (rn run) churnUsage() usage {
	a, b := rn.ready.End, rn.churn.Start
	return usage{CPUSecs: b.CPUSecs - a.CPUSecs, Writes: since(a.Writes, b.Writes), Reads: since(a.Reads, b.Reads), Switches: since(a.Switches, b.Switches),
		GCCycles: since(a.GCCycles, b.GCCycles), GCCPUSecs: since(a.GCCPUSecs, b.GCCPUSecs)}
}

// since is the growth of a counter from a to b, or -1 if either is unread.
func since[T int64 | float64](a, b T) T {
	if a < 0 || b < 0 {
		return -1
	}
	return b - a
}

// run is one mode's measurements and what the parent checked.
type run struct {
	m      mode
	ready  result
	churn  *result
	stream *streamCount // bridge modes
	// readyStream is a bridge's stream once it was ready, before the
	// churn.
	readyStream *streamCount
	// cluster is what the cluster mix's churn made.
	cluster *clusterPlan
	load    *churnStats
	// apiserverCPU is the CPU seconds kube-apiserver spent from the start
	// of the churn to the child's churn measurement; 0 if unread.
	apiserverCPU float64
}

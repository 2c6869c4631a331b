package main

import (
	"strings"

	"github.com/kubebridge/kubebridge/internal/shard"
)

const benchNamespace = "bench-versus"

// modeKind is one row of the mode table: what a mode's child runs, which
// suffixes it takes (those of its kind, see suffixes.go), what it
// publishes and which floor it is. The parent (runChild, the report) and
// the child (child) read the row; nothing switches on a mode's name.
type modeKind struct {
	name  string
	label string
	// runs is what caches the objects in the child: nothing, an informer,
	// or the bridge on one of its paths.
	runs cacheKind
	// transform strips managed fields and the last-applied annotation
	// from the informer's objects, as the bridge does.
	transform bool
	// sharded modes hold one shard's part of the objects, named after "@"
	// (mode@i/N, required).
	sharded bool
	// raw is what the child publishes once its informer synced, without
	// a bridge; a bridge publishes its own stream.
	raw rawKind
	// floor is what the mode is the floor of: the runs other modes are
	// compared with.
	floor floorRole
	// objects is the kind of the objects the mode caches and its churn
	// changes; nil is ConfigMaps.
	objects *objectKind
	// builtIn, for a mode of custom resources, is the mode that runs the
	// same on ConfigMaps: its runs are paired with that mode's in the
	// report (reportcrd.go).
	builtIn string
}

// objectKind is the kind of the mode's objects.
func (k *modeKind) objectKind() *objectKind {
	if k.objects == nil {
		return configMapObjects
	}
	return k.objects
}

// cacheKind is what a mode's child caches the objects with.
type cacheKind int

const (
	// noCache: clients only (the baseline's heap).
	noCache cacheKind = iota
	// typedInformer: client-go's typed shared informer, over protobuf.
	typedInformer
	// dynamicInformer: client-go's dynamic informer, unstructured JSON.
	dynamicInformer
	// typedSource: the informer the bridge builds (informers.NewSource),
	// typed, with a shard's Owns.
	typedSource
	// bridgeTyped and bridgeDynamic run the bridge as cmd/bridge does,
	// on its typed or its dynamic path.
	bridgeTyped
	bridgeDynamic
)

// bridge reports whether the child runs the bridge.
func (c cacheKind) bridge() bool { return c == bridgeTyped || c == bridgeDynamic }

// informer reports whether the child runs an informer of its own.
func (c cacheKind) informer() bool {
	return c == typedInformer || c == dynamicInformer || c == typedSource
}

// rawKind is what a publish-raw mode sends for each cached object.
type rawKind int

const (
	noRaw rawKind = iota
	// rawObjects: each object as encoding/json writes it.
	rawObjects
	// rawItems: the bridge's snapshot item for each object.
	rawItems
	// rawEvents: no objects at start; every change after the initial
	// list, its object as encoding/json writes it, published and
	// acknowledged (eventPublisher).
	rawEvents
)

// floorRole is which comparison a mode is the floor of.
type floorRole int

const (
	// The zero value: the floor of nothing.
	_ floorRole = iota
	// heapFloor: the heap with clients only; each mode's heap per object
	// is reported above it.
	heapFloor
	// cpuFloor: the bare typed informer; each mode's CPU per event, RSS
	// and peak RSS are compared with the mean of its runs with the same
	// gzip and GOMAXPROCS settings.
	cpuFloor
	// snapshotFloor: the objects published raw; each start-up snapshot is
	// compared with the mean of its runs.
	snapshotFloor
)

var modeTable = []modeKind{
	{name: "baseline", label: "baseline: clients only, no informer", runs: noCache, floor: heapFloor},
	{name: "typed", label: "typed informer (protobuf)", runs: typedInformer, floor: cpuFloor},
	{name: "typed-transform", label: "typed informer + transform", runs: typedInformer, transform: true},
	{name: "dynamic", label: "dynamic informer (unstructured, JSON)", runs: dynamicInformer},
	{name: "dynamic-transform", label: "dynamic informer + transform", runs: dynamicInformer, transform: true},
	{name: "typed-shard", label: "typed informer, one shard", runs: typedSource, sharded: true},
	{name: "publish-raw", label: "informer, then its objects published raw (the snapshot's floor)",
		runs: typedInformer, transform: true, raw: rawObjects, floor: snapshotFloor},
	{name: "publish-raw-items", label: "informer, then the bridge's snapshot items for its objects published raw",
		runs: typedInformer, transform: true, raw: rawItems},
	{name: "typed-publish", label: "typed informer + transform publishing every event's object raw, acknowledged (a publisher's floor)",
		runs: typedInformer, transform: true, raw: rawEvents},
	{name: "bridge-typed", label: "bridge, typed path", runs: bridgeTyped},
	{name: "bridge-dynamic", label: "bridge, dynamic path", runs: bridgeDynamic},
	{name: "bridge-shard", label: "bridge, typed path, one shard", runs: bridgeTyped, sharded: true},
	// The same objects as custom resources (Widgets, served as JSON):
	// the bridge reads them through its dynamic informer.
	{name: "dynamic-crd", label: "dynamic informer of Widgets (a CRD), + transform", runs: dynamicInformer, transform: true, objects: widgetObjects, builtIn: "dynamic-transform"},
	{name: "bridge-crd", label: "bridge of Widgets (a CRD)", runs: bridgeTyped, objects: widgetObjects, builtIn: "bridge-typed"},
}

// kindNamed is the row of the mode called name, or nil.
func kindNamed(name string) *modeKind {
	for i := range modeTable {
		if modeTable[i].name == name {
			return &modeTable[i]
		}
	}
	return nil
}

// publishes reports whether the mode's child writes to its stream
// (streamName): a bridge, or a raw publisher.
func (k *modeKind) publishes() bool { return k.runs.bridge() || k.raw != noRaw }

// mode is one run of a mode row, with what its suffixes set.
type mode struct {
	kind  *modeKind
	label string
	// budget is the bridge's BRIDGE_PUBLISH_BUFFER_BYTES; empty is the
	// default.
	budget string
	// noGzip sets rest.Config.DisableCompression: the apiserver's
	// responses are not gzipped (client-go asks for gzip by default).
	noGzip bool
	// gzip is a bridge mode's BRIDGE_KUBE_COMPRESSION=true (mode+gzip):
	// the bridge turns compression off unless asked.
	gzip bool
	// gogc, if set, is the child's GOGC (mode+gogc=N).
	gogc string
	// procs, if set, is the child's GOMAXPROCS (mode+procs=N).
	procs string
	// linger, if set, is a bridge mode's BRIDGE_PUBLISH_LINGER
	// (mode+linger=D).
	linger string
	// shard is the part of the objects of a sharded mode (mode@i/N).
	shard shard.Shard
	// config, if set, is a bridge mode's BRIDGE_CONFIG (mode+config=PATH):
	// a rules file, which lists the resources the bridge watches.
	config string
	// exe, if set, is the versus binary the child runs from
	// (mode+exe=PATH): another build, say one of an earlier commit, so
	// that two builds of the bridge alternate in one invocation.
	exe string
	// cbor sets client-go's ClientsAllowCBOR and ClientsPreferCBOR gates
	// in the child (mode+cbor): its dynamic client asks for CBOR, which
	// the apiserver serves with -cbor-server.
	cbor bool
}

// id names a mode run: its name and its suffixes, in the suffix table's
// order.
func (m mode) id() string {
	id := m.kind.name
	for _, s := range suffixes {
		id += s.id(m)
	}
	return id
}

func (m mode) isBridge() bool { return m.kind.runs.bridge() }

func modeNames() string {
	var n []string
	for _, k := range modeTable {
		n = append(n, k.name)
	}
	return strings.Join(n, ",")
}

// streamName is the stream of mode m (one per mode: a mode listed again
// has it removed first, see removeStream); stream names allow letters,
// digits, "_" and "-".
func streamName(m mode) string { return "VERSUS_" + strings.ToUpper(token(m.id())) }

// token maps a mode run's id to letters, digits and "_", valid in stream
// names and subject tokens alike.
func token(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

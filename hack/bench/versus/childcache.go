package main

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
)

// cached is what a child's cache came up with.
type cached struct {
	// objects is how many objects it holds; -1 if the child cannot see
	// them (the baseline, a bridge).
	objects int
	// store holds an informer's objects, for a raw publisher.
	store cache.Store
	// keep is what must stay reachable until the child ends.
	keep any
	// stop ends a bridge; nil for the others.
	stop func() error
	// gzip is whether the API server's responses are gzipped for this
	// child: client-go's default unless -no-gzip; a bridge's own setting.
	gzip bool
	// gcPercent is the collector's target when the child set it (the
	// bridge modes), else 0: GOGC, or Go's default, applies.
	gcPercent int
	// rawPublish is a raw publisher's time to publish its objects.
	rawPublish time.Duration
	// failed is an event publisher's first failed publish (typed-publish);
	// nil for the others.
	failed func() error
}

// start brings up what mode row c.kind runs, until it is ready: its cache
// synced, or for the bridge its start-up snapshot stored, and for a raw
// publisher its objects published.
func (c *childRun) start(ctx context.Context) (cached, error) {
	st, err := c.startCache(ctx)
	if err != nil || c.kind.raw == noRaw || c.kind.raw == rawEvents {
		return st, err
	}
	raw := bridgeChild{kind: c.kind, namespace: c.namespace, natsURL: c.flags.natsURL, stream: c.flags.stream}
	st.rawPublish, err = publishRaw(ctx, st.store, raw, c.kind.raw == rawItems)
	return st, err
}

func (c *childRun) startCache(ctx context.Context) (cached, error) {
	if c.kind.runs.bridge() {
		return c.startBridge(ctx)
	}
	st := cached{objects: -1, gzip: !c.rest.DisableCompression}
	var err error
	switch c.kind.runs {
	case typedInformer:
		err = c.startTyped(ctx, &st)
	case dynamicInformer:
		err = c.startDynamic(ctx, &st)
	case typedSource:
		err = c.startSource(ctx, &st)
	}
	return st, err
}

func (c *childRun) startBridge(ctx context.Context) (cached, error) {
	f := c.flags
	b := bridgeChild{kind: c.kind, namespace: c.namespace, natsURL: f.natsURL, stream: f.stream, budget: f.budget, shard: f.shard,
		namespaces: f.namespaces, named: f.named, pods: f.pods, rest: c.rest, peaks: c.peaks}
	running, err := b.start(ctx)
	if err != nil {
		return cached{}, err
	}
	return cached{objects: -1, stop: running.stop, gzip: running.gzip, gcPercent: running.gcPercent}, nil
}

package bridge

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/metrics"
	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/encode"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// prepare does the I/O that New leaves out, before Run watches anything:
// it resolves the configured types through discovery, waits for the
// stream (checkStream) and builds an informer for each type
// (buildSources). The operational endpoints report on the bridge from
// then on.
func (b *Bridge) prepare(ctx context.Context) error {
	watches, err := resolveWatches(ctx, b.cfg, informers.NewResolver(b.kube.Discovery))
	if err != nil {
		return err
	}
	if err := b.checkStream(ctx); err != nil {
		return err
	}
	if err := b.buildSources(ctx, watches); err != nil {
		return err
	}
	b.opts.health.attach(b)
	return nil
}

// checkStream creates or checks the stream, waiting as long as JetStream
// takes to answer (ensureStream), and reads its limits.
func (b *Bridge) checkStream(ctx context.Context) error {
	m := b.metrics
	info, err := ensureStream(ctx, b.js, b.cfg, b.subjects, func(error) { m.JetStreamWaits.Inc() })
	if err != nil {
		return err
	}
	stream, err := b.js.Stream(ctx, info.Config.Name)
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", info.Config.Name, err)
	}
	b.info, b.stream, b.limits = info, stream, newStreamLimits(b.nc, b.js, info)
	klog.FromContext(ctx).Info("JetStream stream ready", "stream", info.Config.Name, "subjects", strings.Join(info.Config.Subjects, ","), "maxPayload", b.limits.maxPayload())
	m.NATSConnected(b.nc.IsConnected)
	return nil
}

// buildSources builds the informers of watches, feeding the intake (through
// the gate with leader election), and holds each type in the intake until
// its missed-delete scan. A sharded bridge first lists the namespaces for
// its apiserver shard selector.
func (b *Bridge) buildSources(ctx context.Context, watches []watch) error {
	logger := klog.FromContext(ctx)
	cfg, m := b.cfg, b.metrics
	trims := informers.TransformOptions{StripManagedFields: cfg.StripManagedFields, StripLastApplied: cfg.StripLastApplied, RedactSecrets: cfg.RedactSecrets}
	transform := trims.Transform()
	sourceOpts := []informers.SourceOption{informers.WithClock(b.opts.now), informers.WithObserver(sourceObserver{m})}
	if sh := cfg.Shard(); sh.Sharded() {
		// Objects of other shards never reach the cache; with the
		// apiserver's sharded watch, they are not even sent.
		b.selectors = newSelectorRefresh(ctx, b.kube, sh)
		sourceOpts = append(sourceOpts, informers.WithOwns(shard.Owner(sh)), informers.WithShardSelector(b.selectors.selector))
		logger.Info("Sharded: this bridge publishes the namespaces, and the cluster-scoped names, that hash to its shard", "shard", sh.String(),
			"lease", cfg.LeaseName, "termSubject", b.subjects.Term())
	}
	ruleMetrics := m.Rules(watchNames(watches))
	b.updates = map[*informers.Resource]encode.UpdateData{}
	for _, w := range watches {
		queue, srcTransform, gate := b.withRules(ctx, w, transform, ruleMetrics)
		opts := sourceOpts
		if gate != nil {
			// The gate reads every object's content: a custom
			// resource's is cached as it is, not compacted.
			opts = append(slices.Clip(opts), informers.WithUnstructuredCache())
		} else {
			// The source's transform is trims': a custom resource is
			// decoded straight into its compact form; a built-in one is
			// cached compact too, its JSON written once rather than at
			// every event that carries it, new or old.
			opts = append(slices.Clip(opts), informers.WithCompactDecoding(trims), informers.WithCompactTyped())
		}
		src, err := informers.NewSource(b.kube.Clients, w.resource, w.scope, srcTransform, queue, opts...)
		if err != nil {
			return err
		}
		b.ruleGates = append(b.ruleGates, gate)
		logger.Info("Watching", "resource", w.resource.String(), "kind", w.resource.Kind, "as", w.names, "namespaces", w.scope.Namespaces,
			"labels", w.scope.LabelSelector, "fields", w.scope.FieldSelector, "typed", src.Typed, "subjects", b.subjects.TypeWildcard(w.resource.Type()))
		b.sources = append(b.sources, src)
	}
	// Nothing of a type is published before its missed-delete scan: see
	// intake.Intake.Hold. Its snapshotter releases it.
	for _, src := range b.sources {
		b.intake.Hold(src.Resource)
	}
	allReady := readyWhenAll(len(b.sources), func() {
		logger.Info("Start-up snapshots published; the stream holds the current state of every watched type")
		releaseStartupGarbage()
		b.opts.ready()
	})
	b.statuses = make([]*typeStatus, len(b.sources))
	for i, src := range b.sources {
		b.statuses[i] = newTypeStatus(src.Resource.String(), m, allReady)
	}
	return nil
}

// withRules returns the queue and transform of w's informer: b's, unless
// w's rules read or project objects, when its changes go through a
// ruleGate and its objects are cached projected (ruleTransform). It also
// records what w's updates carry.
func (b *Bridge) withRules(ctx context.Context, w watch, transform cache.TransformFunc, m metrics.Rules) (informers.Queue, cache.TransformFunc, *ruleGate) {
	spec := w.rules.Spec()
	if spec.Patch || !spec.OldObject {
		b.updates[w.resource] = encode.UpdateData{Patch: spec.Patch, OmitOldObject: !spec.OldObject}
	}
	if spec.Match == "" && spec.When == "" && len(spec.IgnoreFields) == 0 {
		return b.queue, transform, nil
	}
	klog.FromContext(ctx).Info("Rules", "resource", w.resource.String(), "match", spec.Match, "ignoreFields", spec.IgnoreFields, "when", spec.When,
		"patch", spec.Patch, "oldObject", spec.OldObject)
	gate := newRuleGate(w.resource, w.rules, b.queue, m, klog.FromContext(ctx).WithName("rules"))
	return gate, ruleTransform(transform, w.resource, w.rules), gate
}

func watchNames(watches []watch) []string {
	names := make([]string, len(watches))
	for i, w := range watches {
		names[i] = w.resource.String()
	}
	return names
}

// releaseStartupGarbage returns the memory the start-up snapshots freed to
// the operating system at once, instead of as the runtime's background
// scavenger gets to it: the snapshot's encoding buffers are garbage the
// moment it is stored, and until they are returned the RSS after start
// reads up to a third above the live heap's (measured with
// hack/bench/versus: 150 MiB RSS over a 75 MiB heap at 20,000 objects,
// 115 MiB after this). It costs one full collection, once.
func releaseStartupGarbage() { debug.FreeOSMemory() }

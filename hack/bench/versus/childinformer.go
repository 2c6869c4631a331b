package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// configMapResource is the ConfigMaps as the bridge's informers name a
// resource type.
func configMapResource() *informers.Resource {
	return &informers.Resource{GVR: configMaps, Kind: "ConfigMap", Namespaced: true}
}

// transform strips what the bridge strips: managed fields and the
// last-applied annotation.
func transform() cache.TransformFunc {
	return informers.TransformOptions{StripManagedFields: true, StripLastApplied: true}.Transform()
}

// startTyped runs client-go's typed informer of the ConfigMaps, with the
// transform if the row says so.
func (c *childRun) startTyped(ctx context.Context, st *cached) error {
	opts := []kinformers.SharedInformerOption{kinformers.WithNamespace(c.namespace), kinformers.WithTweakListOptions(c.tweak)}
	if c.kind.transform {
		opts = append(opts, kinformers.WithTransform(transform()))
	}
	f := kinformers.NewSharedInformerFactoryWithOptions(c.kube.Clients.Typed, 0, opts...)
	inf := f.Core().V1().ConfigMaps().Informer()
	handler := c.counter()
	if c.kind.raw == rawEvents {
		p, closeConn, err := startEventPublisher(ctx, bridgeChild{kind: c.kind, namespace: c.namespace, natsURL: c.flags.natsURL, stream: c.flags.stream}, &c.events)
		if err != nil {
			return err
		}
		context.AfterFunc(ctx, closeConn)
		handler, st.failed = p.handler(), p.err
	}
	n, err := startInformer(ctx, f.Start, inf, handler, c.flags.wait)
	st.objects, st.store, st.keep = n, inf.GetStore(), inf
	return err
}

// startDynamic runs client-go's dynamic informer of the mode's objects
// (ConfigMaps, or Widgets), with the transform if the row says so.
func (c *childRun) startDynamic(ctx context.Context, st *cached) error {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.kube.Clients.Dynamic, 0, c.namespace, c.tweak)
	inf := f.ForResource(c.kind.objectKind().gvr).Informer()
	if c.kind.transform {
		if err := inf.SetTransform(transform()); err != nil {
			return err
		}
	}
	n, err := startInformer(ctx, f.Start, inf, c.counter(), c.flags.wait)
	st.objects, st.store, st.keep = n, inf.GetStore(), inf
	return err
}

// startSource runs the shard's part only, through the Source the bridge
// builds: objects of other shards never reach the cache.
func (c *childRun) startSource(ctx context.Context, st *cached) error {
	sh, err := contract.ParseShard(c.flags.shard)
	if err != nil {
		return err
	}
	scope := informers.Scope{Namespaces: []string{c.namespace}}
	if c.flags.namespaces > 1 {
		scope = informers.Scope{LabelSelector: benchLabel}
	}
	q := countingQueue{events: &c.events, wait: c.flags.wait}
	src, err := informers.NewSource(c.kube.Clients, configMapResource(), scope, nil, q, informers.WithOwns(shard.Owner(sh)))
	if err != nil {
		return err
	}
	src.Run(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), src.HasSynced) {
		return errors.New("cache did not sync")
	}
	st.objects, st.keep = len(src.Keys()), src
	return nil
}

// counter counts an informer's notifications after its initial list.
func (c *childRun) counter() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ interface{}, isInInitialList bool) {
			if !isInInitialList {
				c.events.Add(1)
			}
		},
		UpdateFunc: func(_, _ interface{}) { c.events.Add(1) },
		DeleteFunc: func(interface{}) { c.events.Add(1) },
	}
}

// awaitChurn reads "measure N" from the parent and, for an informer mode,
// waits until the informer delivered N events.
func awaitChurn(ctx context.Context, informer bool, events *atomic.Int64) error {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return errors.New("parent closed stdin before the churn was done")
	}
	var want int64
	if _, err := fmt.Sscanf(in.Text(), "measure %d", &want); err != nil {
		return fmt.Errorf("parent said %q: %w", in.Text(), err)
	}
	if !informer {
		return nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	for events.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("informer delivered %d events after 5m, want %d", events.Load(), want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// startInformer starts an informer's factory, counting the informer's
// events when wait is set, and returns how many objects it holds once
// synced.
func startInformer(ctx context.Context, start func(<-chan struct{}), inf cache.SharedIndexInformer, counter cache.ResourceEventHandler, wait bool) (int, error) {
	if wait {
		if _, err := inf.AddEventHandler(counter); err != nil {
			return 0, err
		}
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return 0, errors.New("cache did not sync")
	}
	return len(inf.GetStore().ListKeys()), nil
}

// countingQueue counts a Source's changes after its initial list, as the
// informer modes' handler does, with -wait only.
type countingQueue struct {
	events *atomic.Int64
	wait   bool
}

func (q countingQueue) Add(c informers.Change) {
	if q.wait {
		q.events.Add(1)
	}
}

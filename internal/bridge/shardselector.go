package bridge

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
	"github.com/kubebridge/kubebridge/pkg/informers"
)

// selectorRefresh holds a shard's apiserver shard selector: the one that
// leaves out the namespaces other shards own, for the watches of every
// namespace, so that an apiserver with ShardedListAndWatch sends this
// shard about its part only. run rebuilds it from the namespaces, so that
// other shards' namespaces created since are left out too.
type selectorRefresh struct {
	kube     Kube
	shard    contract.Shard
	selector *informers.ShardSelector
	// others are the other shards' namespaces the selector was built
	// from.
	others []string
}

// newSelectorRefresh builds the selector from the namespaces that exist
// now. Without a typed client, or when the namespaces cannot be listed, it
// sends none, which only costs the filtering on the server.
func newSelectorRefresh(ctx context.Context, kube Kube, sh contract.Shard) *selectorRefresh {
	r := &selectorRefresh{kube: kube, shard: sh, selector: informers.NewShardSelector("")}
	if kube.Clients.Typed == nil {
		return r
	}
	logger := klog.FromContext(ctx)
	others, err := otherShardsNamespaces(ctx, kube, sh)
	if err != nil {
		logger.Info("Cannot list namespaces for the shard selector; every shard receives every object and keeps its own (grant list on namespaces to filter on the apiserver)", "err", err)
		return r
	}
	sel := shard.ExcludeSelector(others)
	logTooLong(logger, sel, others)
	r.selector.Set(sel)
	r.others = others
	return r
}

// run lists the namespaces every interval until ctx ends, once synced
// reports every informer synced (a new selector restarts their watches,
// and one restarted in the middle of its initial events would be listed
// again), and sets the selector they give; the watches then restart with
// it from where they were. A failed list keeps the selector in use.
func (r *selectorRefresh) run(ctx context.Context, every time.Duration, synced func() bool) {
	logger := klog.FromContext(ctx)
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !synced() {
			continue
		}
		others, err := otherShardsNamespaces(ctx, r.kube, r.shard)
		if err != nil {
			if !failing && ctx.Err() == nil {
				logger.Info("Cannot list namespaces to refresh the shard selector; the one in use stays until a list succeeds", "err", err)
			}
			failing = true
			continue
		}
		failing = false
		next := shard.ExcludeSelector(others)
		if r.selector.Set(next) {
			added, gone := namespaceChanges(r.others, others)
			logger.Info("Shard selector rebuilt from the namespaces: the watches of every namespace start again where they were, with the new one",
				"otherShardsNamespaces", len(others), "new", firstNames(added, 10), "newCount", len(added), "goneCount", len(gone))
			logTooLong(logger, next, others)
		}
		r.others = others
	}
}

// otherShardsNamespaces lists the namespaces that other shards own.
func otherShardsNamespaces(ctx context.Context, kube Kube, sh contract.Shard) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := kube.Clients.Typed.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var others []string
	for _, ns := range list.Items {
		if !shard.Owns(sh, ns.Name, "") {
			others = append(others, ns.Name)
		}
	}
	return others, nil
}

// logTooLong says so when the other shards' namespaces are too many for a
// selector the apiserver takes (sel is then empty).
func logTooLong(logger klog.Logger, sel string, others []string) {
	if sel == "" && len(others) > 0 {
		logger.Info("Too many other shards' namespaces for an apiserver shard selector; every object is received and filtered here", "namespaces", len(others))
	}
}

// namespaceChanges are the namespaces of now not in before, and of before
// not in now.
func namespaceChanges(before, now []string) (added, gone []string) {
	was := make(map[string]bool, len(before))
	for _, ns := range before {
		was[ns] = true
	}
	for _, ns := range now {
		if was[ns] {
			delete(was, ns)
		} else {
			added = append(added, ns)
		}
	}
	for ns := range was {
		gone = append(gone, ns)
	}
	return added, gone
}

// firstNames is at most n of names, for a log line.
func firstNames(names []string, n int) []string {
	return names[:min(n, len(names))]
}

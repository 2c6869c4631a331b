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

// newShardSelector is the apiserver shard selector that leaves out the
// namespaces other shards own, for the watches of every namespace: an
// apiserver with ShardedListAndWatch then sends this shard about its part
// only. It names the namespaces that exist now, and returns them too;
// selectorRefresh adds those created later. Without a typed client, or
// when the namespaces cannot be listed, it sends none, which only costs
// the filtering on the server.
func newShardSelector(ctx context.Context, kube Kube, sh contract.Shard) (*informers.ShardSelector, []string) {
	logger := klog.FromContext(ctx)
	if kube.Clients.Typed == nil {
		return informers.NewShardSelector(""), nil
	}
	others, err := otherShardsNamespaces(ctx, kube, sh)
	if err != nil {
		logger.Info("Cannot list namespaces for the shard selector; every shard receives every object and keeps its own (grant list on namespaces to filter on the apiserver)", "err", err)
		return informers.NewShardSelector(""), nil
	}
	sel := shard.ExcludeSelector(others)
	logTooLong(logger, sel, others)
	return informers.NewShardSelector(sel), others
}

// selectorRefresh rebuilds a shard's apiserver selector from the
// namespaces, so that other shards' namespaces created since it was built
// are left out too.
type selectorRefresh struct {
	kube     Kube
	shard    contract.Shard
	selector *informers.ShardSelector
	// others are the other shards' namespaces the selector was built
	// from.
	others []string
	every  time.Duration
	// synced reports whether every informer has synced: a new selector
	// restarts their watches, and one restarted in the middle of its
	// initial events would be listed again.
	synced func() bool
}

// run lists the namespaces every interval until ctx ends, and sets the
// selector they give; the watches then restart with it from where they
// were. A failed list keeps the selector in use.
func (r *selectorRefresh) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !r.synced() {
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

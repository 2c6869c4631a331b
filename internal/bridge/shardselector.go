package bridge

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/internal/shard"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// otherShardsSelector is the apiserver shard selector that leaves out the
// namespaces other shards own, for the watches of every namespace: an
// apiserver with ShardedListAndWatch then sends this shard about its part
// only. It names the namespaces that exist now; one created later is sent
// to every shard and filtered here, as everything is by an apiserver
// without the feature. "" (no selector) when the namespaces cannot be
// listed, which only costs the filtering on the server.
func otherShardsSelector(ctx context.Context, kube Kube, sh contract.Shard) string {
	logger := klog.FromContext(ctx)
	if kube.Clients.Typed == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := kube.Clients.Typed.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		logger.Info("Cannot list namespaces for the shard selector; every shard receives every object and keeps its own (grant list on namespaces to filter on the apiserver)", "err", err)
		return ""
	}
	var others []string
	for _, ns := range list.Items {
		if !shard.Owns(sh, ns.Name, "") {
			others = append(others, ns.Name)
		}
	}
	sel := shard.ExcludeSelector(others)
	if sel == "" && len(others) > 0 {
		logger.Info("Too many other shards' namespaces for an apiserver shard selector; every object is received and filtered here", "namespaces", len(others))
	}
	return sel
}

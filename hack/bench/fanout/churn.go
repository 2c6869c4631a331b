package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// churnPlan is how one setup's churn splits: creates first, then updates,
// then deletes, as hack/bench/versus makes them. An update rewrites one
// data key of a preloaded ConfigMap (round robin), so its event carries
// objects of full size; a delete removes an object the creates made, so
// every setup starts on the same objects.
type churnPlan struct {
	creates, updates, deletes int
}

// planChurn splits n changes in thirds; the remainder are creates.
func planChurn(n int) churnPlan {
	return churnPlan{creates: n - 2*(n/3), updates: n / 3, deletes: n / 3}
}

func (p churnPlan) String() string {
	return fmt.Sprintf("%d creates, %d updates, %d deletes", p.creates, p.updates, p.deletes)
}

// runChurn makes setup seq's churn at -churn-rate, then sets the marker
// to the setup's token: the last change, which every consumer waits for.
func (b *bench) runChurn(ctx context.Context, s setup) error {
	plan := planChurn(b.o.churn)
	start := time.Now()
	err := benchkit.Paced(ctx, b.o.churn, b.o.churnRate, b.o.churnWorkers, func(ctx context.Context, k int) error {
		return b.change(ctx, s.seq, plan, k)
	}, func(sent int) {
		if sent%1000 == 0 {
			logf("churn: %d/%d changes sent in %v", sent, b.o.churn, time.Since(start).Round(time.Millisecond))
		}
	})
	if err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	return benchkit.SetConfigMapData(ctx, b.cs, benchNamespace, markerName, markerKey, s.token())
}

// change makes change k of setup seq's churn.
func (b *bench) change(ctx context.Context, seq int, plan churnPlan, k int) error {
	switch {
	case k < plan.creates:
		return benchkit.CreateConfigMap(ctx, b.cs, benchNamespace, churnName(seq, k), benchLabels(), uint64(seq)<<32|uint64(k), b.o.size)
	case k < plan.creates+plan.updates:
		j := k - plan.creates
		rng := rand.New(rand.NewPCG(uint64(j), uint64(seq)<<32|0x6368))
		key := "key-" + strconv.Itoa(j/b.o.objects%benchkit.DataKeys)
		return benchkit.SetConfigMapData(ctx, b.cs, benchNamespace, objectName(j%b.o.objects), key, fixtures.RandomData(rng, b.o.size/benchkit.DataKeys))
	default:
		return benchkit.DeleteConfigMap(ctx, b.cs, benchNamespace, churnName(seq, k-plan.creates-plan.updates))
	}
}

// churnName names the j-th object setup seq's churn creates.
func churnName(seq, j int) string { return fmt.Sprintf("churn-%02d-%06d", seq, j) }

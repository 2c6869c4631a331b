package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
	"github.com/kubebridge/kubebridge/internal/fixtures"
)

// churnMix is how many of each kind of change one churn makes. Creates
// come first, then updates, then deletes, which remove the objects the
// creates made: every mode starts its churn on the same objects.
type churnMix struct {
	creates, updates, deletes int
	// cluster is the number of changes of the cluster mix (cluster.go),
	// which is listed alone.
	cluster int
}

// parseChurnMix splits total changes evenly over the kinds listed in
// kinds (a comma-separated subset of create,update,delete); the remainder
// goes to the first kind listed that is not delete, so there are never
// more deletes than creates.
func parseChurnMix(kinds string, total int) (churnMix, error) {
	var m churnMix
	if strings.TrimSpace(kinds) == "cluster" {
		return churnMix{cluster: total}, nil
	}
	var counts []*int
	for _, k := range strings.Split(kinds, ",") {
		var c *int
		switch strings.TrimSpace(k) {
		case "create":
			c = &m.creates
		case "update":
			c = &m.updates
		case "delete":
			c = &m.deletes
		case "cluster":
			return m, errors.New("-churn-mix: cluster is a mix of its own: list it alone")
		default:
			return m, fmt.Errorf("-churn-mix: unknown kind %q (want create, update or delete)", k)
		}
		if slices.Contains(counts, c) {
			return m, fmt.Errorf("-churn-mix: %q listed twice", k)
		}
		counts = append(counts, c)
	}
	if slices.Contains(counts, &m.deletes) && !slices.Contains(counts, &m.creates) {
		return m, errors.New("-churn-mix: delete removes what create made, so it needs create")
	}
	for _, c := range counts {
		*c = total / len(counts)
	}
	for _, c := range counts {
		if c != &m.deletes {
			*c += total % len(counts)
			break
		}
	}
	return m, nil
}

// total is the number of changes, and of events the informer delivers.
func (m churnMix) total() int { return m.creates + m.updates + m.deletes + m.cluster }

func (m churnMix) String() string {
	if m.cluster > 0 {
		return fmt.Sprintf("%d changes like a cluster's", m.cluster)
	}
	return fmt.Sprintf("%d creates, %d updates and %d deletes", m.creates, m.updates, m.deletes)
}

// churnStats is what the churn did.
type churnStats struct {
	Changes  int
	Duration time.Duration
	// Outage is how long NATS was actually down.
	Outage time.Duration
	// Markers are the cluster mix's last changes, one per type.
	Markers []marker
}

// marker is a change the stream must hold before the churn's events are
// counted: the kind and name of its object, and the resourceVersion the
// change wrote.
type marker struct {
	kind, name, rv string
}

// runChurn makes b.churn.mix's changes at b.churn.rate to objects of kind
// ok: creates of new objects of -size bytes, updates of the preloaded ones round robin,
// each rewriting one of the four keys with new random data so the object
// keeps its size, and deletes of the created ones; or the cluster mix's
// changes, its markers last, once every other change is made. With an
// outage configured, NATS is stopped during the churn. It returns once
// every change is made and NATS is up again.
func (b *bench) runChurn(ctx context.Context, ok *objectKind, seq int) (churnStats, error) {
	c := b.churn
	st := churnStats{Changes: c.mix.total()}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var outageErr error
	outageDone := make(chan struct{})
	go func() {
		defer close(outageDone)
		st.Outage, outageErr = b.outage(ctx)
	}()
	err := b.sendChanges(ctx, ok, c.mix.total()-b.markers(), seq)
	if err == nil {
		st.Markers, err = b.sendMarkers(ctx, seq)
	}
	st.Duration = time.Since(start)
	if err != nil {
		cancel()
	}
	<-outageDone
	if err != nil {
		return st, fmt.Errorf("churn: %w", err)
	}
	return st, outageErr
}

// outage stops NATS for -nats-outage, -outage-after into the churn, unless
// ctx ends first, and returns how long it was down.
func (b *bench) outage(ctx context.Context) (time.Duration, error) {
	c := b.churn
	if c.outage <= 0 {
		return 0, nil
	}
	select {
	case <-time.After(c.outageAfter):
	case <-ctx.Done():
		return 0, nil
	}
	down := time.Now()
	fmt.Fprintf(os.Stderr, "churn: stopping NATS for %v\n", c.outage)
	b.env.StopNATS()
	select {
	case <-time.After(c.outage):
	case <-ctx.Done():
	}
	err := b.env.StartNATS()
	d := time.Since(down)
	fmt.Fprintf(os.Stderr, "churn: NATS started again after %v\n", d.Round(time.Millisecond))
	return d, err
}

// sendChanges makes changes 0 … n-1 to objects of kind ok at -churn-rate
// from -churn-workers goroutines; the first error stops them.
func (b *bench) sendChanges(ctx context.Context, ok *objectKind, n, seq int) error {
	start := time.Now()
	return benchkit.Paced(ctx, n, b.churn.rate, b.churn.workers, func(ctx context.Context, k int) error {
		return b.change(ctx, ok, k, seq)
	}, func(sent int) {
		if sent%100 == 0 {
			fmt.Fprintf(os.Stderr, "churn: %d/%d changes sent in %v\n", sent, b.churn.mix.total(), time.Since(start).Round(time.Millisecond))
		}
	})
}

// change makes the churn's change k to objects of kind ok: a create, an
// update or a delete, in that order.
func (b *bench) change(ctx context.Context, ok *objectKind, k, seq int) error {
	kind, j := b.churn.mix.at(k)
	switch kind {
	case create:
		return ok.create(ctx, b.clients, b.namespaceOf(kind, j), churnObjectName(seq, j), uint64(seq)<<32|uint64(j), b.size)
	case update:
		return b.updateOne(ctx, ok, j, seq)
	case clusterChange:
		_, err := b.clusterChange(ctx, j, seq)
		return err
	default:
		return ok.remove(ctx, b.clients, b.namespaceOf(kind, j), churnObjectName(seq, j))
	}
}

// changeKind is one of the kinds of change a churn makes.
type changeKind int

const (
	create changeKind = iota
	update
	remove
	// clusterChange is a change of the cluster mix (cluster.go).
	clusterChange
)

// at is the kind of the churn's change k and its index among the changes
// of that kind: creates come first, then updates, then deletes.
func (m churnMix) at(k int) (changeKind, int) {
	switch {
	case m.cluster > 0:
		return clusterChange, k
	case k < m.creates:
		return create, k
	case k < m.creates+m.updates:
		return update, k - m.creates
	default:
		return remove, k - m.creates - m.updates
	}
}

// namespaceOf is the namespace of the j-th change of kind: a created (and
// later deleted) churn object's, or the updated preloaded object's.
func (b *bench) namespaceOf(kind changeKind, j int) string {
	switch kind {
	case update:
		return b.layout.namespace(j % b.objects)
	case clusterChange:
		_, i := b.clusterTarget(j)
		return b.layout.namespace(i)
	}
	return b.layout.namespace(j)
}

// churnObjectName names the j-th object run seq's churn creates.
func churnObjectName(seq, j int) string { return fmt.Sprintf("churn-%02d-%06d", seq, j) }

// updateOne rewrites one data key of object k mod objects, of kind ok,
// with a merge patch: the object keeps its size, and the patch is a
// quarter of it.
func (b *bench) updateOne(ctx context.Context, ok *objectKind, k, seq int) error {
	i := k % b.objects
	rng := rand.New(rand.NewPCG(uint64(k), uint64(seq)<<32|0x6368))
	key := "key-" + strconv.Itoa(k/b.objects%benchkit.DataKeys)
	return ok.setData(ctx, b.clients, b.layout.namespace(i), objectName(i), key, fixtures.RandomData(rng, b.size/benchkit.DataKeys))
}

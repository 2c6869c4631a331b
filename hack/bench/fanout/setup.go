package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// setup is one run over a churn: K consumers on the API server (a), or a
// bridge and K consumers on its stream (b).
type setup struct {
	seq    int
	stream bool
	k      int
}

// setups are the runs, in order: the baselines (K = 0), then for each K
// the informers and then the stream, then the baselines again, so that
// their mean brackets a machine (and an API server) whose speed drifts
// during the run.
func setups(consumers []int) []setup {
	var out []setup
	for _, k := range append(append([]int{0}, consumers...), 0) {
		out = append(out, setup{seq: len(out), k: k}, setup{seq: len(out) + 1, stream: true, k: k})
	}
	return out
}

func (s setup) String() string {
	plural := "s"
	if s.k == 1 {
		plural = ""
	}
	if s.stream {
		return fmt.Sprintf("(b) bridge + %d stream consumer%s", s.k, plural)
	}
	return fmt.Sprintf("(a) %d informer%s", s.k, plural)
}

func (s setup) source() string {
	if s.stream {
		return sourceStream
	}
	return sourceInformer
}

// token is what the setup's churn sets the marker to, last.
func (s setup) token() string { return "setup-" + strconv.Itoa(s.seq) }

// outcome is what one setup measured over its window: from the moment
// every consumer synced and the processes measured were quiet to the moment every
// consumer, the new one too, had seen the churn's last change.
type outcome struct {
	setup
	window                        time.Duration
	apiserver, etcd, nats, bridge usage
	// consumers are the K consumers' usage; the new consumer's is not
	// among them.
	consumers []usage
	// newSync is the new consumer's time from its start to its cache
	// synced.
	newSync time.Duration
	// startAPIEtcd and startNATS are the CPU the API server and etcd
	// together, and nats-server, spent from the K consumers' start until
	// the processes measured were quiet, before the window.
	startAPIEtcd, startNATS float64
}

// running is what a setup started, to be stopped whatever happens.
type running struct {
	bridge    *bridgeProc
	consumers []*consumer
}

func (r *running) stop() error {
	var errs []error
	for _, c := range r.consumers {
		errs = append(errs, c.stop())
	}
	if r.bridge != nil {
		errs = append(errs, r.bridge.stop())
	}
	return errors.Join(errs...)
}

// runSetup runs setup s and checks that it was valid: every consumer
// synced, and after the churn every consumer (and the stream) holds what
// the API server lists.
func (b *bench) runSetup(ctx context.Context, s setup) (outcome, error) {
	logf("==== %v", s)
	out := outcome{setup: s}
	r := &running{}
	err := b.measureSetup(ctx, s, r, &out)
	if stopErr := r.stop(); err == nil {
		err = stopErr
	}
	return out, err
}

// startSetup starts the bridge of a stream setup, on an empty stream, and
// the K consumers, and measures what the servers spent on the consumers'
// start until the processes measured were quiet again.
func (b *bench) startSetup(ctx context.Context, s setup, r *running, out *outcome) error {
	// An empty stream: for the bridge, as the first of a cluster starts;
	// for the informers, so that nats-server holds nothing of the setup
	// before.
	if err := b.resetStream(ctx); err != nil {
		return err
	}
	if s.stream {
		var err error
		if r.bridge, err = b.startBridge(ctx, s.seq); err != nil {
			return err
		}
	}
	servers := b.watched(&running{})
	m, err := startMeter(servers)
	if err != nil {
		return err
	}
	err = b.startConsumers(ctx, s, r)
	if err == nil {
		// The consumers' start-up (lists, bootstraps) is not part of the
		// window.
		err = quiesce(ctx, b.watched(r), b.o.quietCores, b.o.quietTimeout)
	}
	used, _, endErr := m.end()
	if err := errors.Join(err, endErr); err != nil {
		return err
	}
	out.startAPIEtcd, out.startNATS = used["apiserver"].CPU+used["etcd"].CPU, used["nats"].CPU
	return nil
}

func (b *bench) measureSetup(ctx context.Context, s setup, r *running, out *outcome) error {
	if err := b.startSetup(ctx, s, r, out); err != nil {
		return err
	}
	m, err := startMeter(b.watched(r))
	if err != nil {
		return err
	}
	profiled := b.profileNATS(ctx, s)
	newOne := make(chan newConsumer, 1)
	go func() { newOne <- b.startNewConsumer(ctx, s) }()
	churnErr := b.runChurn(ctx, s)
	n := <-newOne
	churnErr = errors.Join(churnErr, <-profiled)
	if n.c != nil {
		r.consumers = append(r.consumers, n.c)
	}
	if err := errors.Join(churnErr, n.err); err != nil {
		_, _, _ = m.end()
		return err
	}
	out.newSync = n.synced
	for _, c := range r.consumers {
		if _, err := c.await(ctx, "marker", b.o.convergeTimeout); err != nil {
			_, _, _ = m.end()
			return fmt.Errorf("invalid run: %w", err)
		}
	}
	used, window, err := m.end()
	if err != nil {
		return err
	}
	out.fill(used, window, s.k)
	logf("window %v; apiserver %.1f s CPU, etcd %.1f s, nats-server %.1f s, bridge %.1f s; the new consumer synced in %v",
		window.Round(time.Millisecond), out.apiserver.CPU, out.etcd.CPU, out.nats.CPU, out.bridge.CPU, out.newSync.Round(time.Millisecond))
	return b.converge(ctx, s, r.consumers)
}

// startConsumers starts the setup's K consumers together and waits until
// each synced and holds what the API server lists.
func (b *bench) startConsumers(ctx context.Context, s setup, r *running) error {
	want, err := b.listState(ctx)
	if err != nil {
		return err
	}
	for i := range s.k {
		c, err := b.startConsumer(consumerName(i), s.source(), s.token())
		if err != nil {
			return err
		}
		r.consumers = append(r.consumers, c)
	}
	start := time.Now()
	for _, c := range r.consumers {
		ev, err := c.await(ctx, "synced", b.o.syncTimeout)
		if err != nil {
			return fmt.Errorf("invalid run: %w", err)
		}
		if ev.Objects != want.Objects {
			return fmt.Errorf("invalid run: %s synced with %d objects, the API server lists %d", c.name, ev.Objects, want.Objects)
		}
	}
	logf("%d consumers synced in %v", s.k, time.Since(start).Round(time.Millisecond))
	return nil
}

func consumerName(i int) string { return fmt.Sprintf("consumer-%02d", i) }

// newConsumer is the consumer started into the churn: the time it took to
// sync.
type newConsumer struct {
	c      *consumer
	synced time.Duration
	err    error
}

// startNewConsumer starts a consumer -new-after into the churn and waits
// until it synced.
func (b *bench) startNewConsumer(ctx context.Context, s setup) newConsumer {
	select {
	case <-time.After(b.o.newAfter):
	case <-ctx.Done():
		return newConsumer{err: ctx.Err()}
	}
	c, err := b.startConsumer("new consumer", s.source(), s.token())
	if err != nil {
		return newConsumer{err: err}
	}
	ev, err := c.await(ctx, "synced", b.o.syncTimeout)
	if err != nil {
		err = fmt.Errorf("invalid run: %w", err)
	}
	return newConsumer{c: c, synced: time.Duration(ev.Secs * float64(time.Second)), err: err}
}

// watched are the processes a setup measures.
func (b *bench) watched(r *running) []watched {
	w := []watched{{"apiserver", b.pids.apiserver}, {"etcd", b.pids.etcd}, {"nats", b.pids.nats}}
	if r.bridge != nil {
		w = append(w, watched{"bridge", r.bridge.pid()})
	}
	for _, c := range r.consumers {
		w = append(w, watched{c.name, c.cmd.Process.Pid})
	}
	return w
}

// fill sets the outcome's usage from the meter's, by process name.
func (o *outcome) fill(used map[string]usage, window time.Duration, k int) {
	o.window = window
	o.apiserver, o.etcd, o.nats, o.bridge = used["apiserver"], used["etcd"], used["nats"], used["bridge"]
	for i := range k {
		o.consumers = append(o.consumers, used[consumerName(i)])
	}
}

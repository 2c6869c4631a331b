package e2e

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// fault is one kind of failure the nemesis injects: run injects it,
// holds it for a random while, heals it, and fills in the span.
type fault struct {
	name string
	run  func(w *world, f *faultSpan)
}

// faults is the nemesis's catalogue, the list.
func faults() []fault {
	return []fault{
		{"kill-leader", (*world).killLeader},
		{"stop-leader", (*world).stopLeader},
		{"kill-nats", (*world).killNATSNode},
		{"partition-nats", (*world).partitionNATSNode},
		{"latency", (*world).addLatency},
		{"restart-apiserver", (*world).restartAPIServer},
		{"compaction", (*world).compactionRelist},
		{"stepdown", (*world).streamStepDown},
		{"both-down", (*world).bothDown},
		{"kill-in-snapshot", (*world).killInSnapshot},
	}
}

// runNemesis injects faults until d has passed: the catalogue in a
// seeded random order, again and again, so that a schedule of a few
// minutes meets every kind of fault, and a gap of calm between two.
func (w *world) runNemesis(d time.Duration) {
	end := time.Now().Add(d)
	catalogue := faults()
	for time.Now().Before(end) {
		for _, i := range w.rng.Perm(len(catalogue)) {
			if !time.Now().Before(end) {
				return
			}
			f := catalogue[i]
			span := faultSpan{name: f.name}
			w.note("fault %s", f.name)
			f.run(w, &span)
			if span.start.IsZero() {
				w.note("fault %s skipped: %s", f.name, span.detail)
				continue
			}
			w.faults = append(w.faults, span)
			w.note("fault %s healed: %s", f.name, span.detail)
			w.hold(w.between(2*time.Second, 5*time.Second))
		}
	}
}

// between is a random duration in [lo, hi), from the run's seed.
func (w *world) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *world) killLeader(f *faultSpan) {
	r, b := w.waitLeader(time.Minute)
	if b == nil {
		f.detail = "no leader"
		return
	}
	f.start = time.Now()
	w.kill(r)
	down := w.between(time.Second, 6*time.Second)
	r.restartAt = time.Now().Add(down)
	f.detail = fmt.Sprintf("SIGKILL of %s (%s); restarted %v later", r.pod, b.name, down.Round(time.Millisecond))
	w.until(time.Minute, func() bool { return r.b != nil })
	f.end = time.Now()
}

// kill SIGKILLs a pod's process and waits until it is gone.
func (w *world) kill(r *robustPod) {
	b := r.b
	if b == nil {
		return
	}
	b.stopped.Store(true)
	if r.frozen {
		signal(b, syscall.SIGCONT)
		r.frozen = false
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	r.exits = append(r.exits, fmt.Sprintf("%s SIGKILL at %s", b.name, w.offset(time.Now())))
	r.b = nil
}

// stopLeader freezes the leader past its Lease, as a long GC pause or a
// stalled node would: a standby takes over, and the thawed leader must
// publish nothing that a consumer applies.
func (w *world) stopLeader(f *faultSpan) {
	r, b := w.waitLeader(time.Minute)
	if b == nil {
		f.detail = "no leader"
		return
	}
	f.start = time.Now()
	signal(b, syscall.SIGSTOP)
	r.frozen = true
	// Past the Lease by more than a standby's retry period (1s, with
	// client-go's jitter up to 2.2s): a standby has taken over.
	frozen := w.leaseDuration + w.between(3*time.Second, 6*time.Second)
	w.hold(frozen)
	if r.b == b {
		signal(b, syscall.SIGCONT)
		r.frozen = false
	}
	f.end = time.Now()
	f.detail = fmt.Sprintf("SIGSTOP of %s (%s) for %v", r.pod, b.name, frozen.Round(time.Millisecond))
}

func (w *world) killNATSNode(f *faultSpan) {
	node := w.cluster.Nodes[w.rng.IntN(len(w.cluster.Nodes))]
	f.start = time.Now()
	node.Kill()
	down := w.between(2*time.Second, 8*time.Second)
	w.hold(down)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := node.Start(ctx); err != nil {
		w.t.Fatalf("nemesis: restart NATS node %s: %v", node.Name, err)
	}
	f.end = time.Now()
	f.detail = fmt.Sprintf("SIGKILL of NATS node %s, restarted after %v", node.Name, down.Round(time.Millisecond))
}

func (w *world) partitionNATSNode(f *faultSpan) {
	node := w.cluster.Nodes[w.rng.IntN(len(w.cluster.Nodes))]
	f.start = time.Now()
	if err := w.cluster.Partition(node.Name); err != nil {
		w.t.Fatalf("nemesis: partition %s: %v", node.Name, err)
	}
	held := w.between(2*time.Second, 8*time.Second)
	w.hold(held)
	if err := w.cluster.Heal(node.Name); err != nil {
		w.t.Fatalf("nemesis: heal %s: %v", node.Name, err)
	}
	f.end = time.Now()
	f.detail = fmt.Sprintf("NATS node %s cut from its peers for %v (its clients kept)", node.Name, held.Round(time.Millisecond))
}

// addLatency delays every byte between the bridges and NATS.
func (w *world) addLatency(f *faultSpan) {
	d := w.between(50*time.Millisecond, 400*time.Millisecond)
	f.start = time.Now()
	for _, p := range w.natsLinks {
		p.SetLatency(d)
	}
	held := w.between(3*time.Second, 10*time.Second)
	w.hold(held)
	for _, p := range w.natsLinks {
		p.SetLatency(0)
	}
	f.end = time.Now()
	f.detail = fmt.Sprintf("%v each way on every bridge's NATS links, for %v", d.Round(time.Millisecond), held.Round(time.Millisecond))
}

func (w *world) restartAPIServer(f *faultSpan) {
	f.start = time.Now()
	w.restartAPIServerWith()
	f.end = time.Now()
	f.detail = fmt.Sprintf("kube-apiserver SIGKILLed and started again (down %v)", f.end.Sub(f.start).Round(time.Millisecond))
}

// restartAPIServerWith restarts kube-apiserver with flags, the traffic
// paused, and the history caught up before and again after (so its
// watches run again before the next write: see historian.relist).
func (w *world) restartAPIServerWith(flags ...string) {
	w.tr.pause()
	defer w.tr.resume()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := w.hist.catchUp(ctx, w.h.dyn, w.types); err != nil {
		w.t.Fatalf("nemesis: %v", err)
	}
	if err := w.env.RestartAPIServer(ctx, flags...); err != nil {
		w.t.Fatalf("nemesis: restart kube-apiserver %v: %v", flags, err)
	}
	if err := w.hist.catchUp(ctx, w.h.dyn, w.types); err != nil {
		w.t.Fatalf("nemesis: after the restart: %v", err)
	}
}

// compactionRelist makes the bridges' informers relist after 410 Gone:
// kube-apiserver runs without its watch cache (watches are served from
// etcd's history), the bridges' links to it are cut while the traffic
// goes on, etcd is compacted past what they saw, and the links come back:
// their watches resume from a compacted resourceVersion. Then the
// apiserver gets its watch cache back.
func (w *world) compactionRelist(f *faultSpan) {
	f.start = time.Now()
	w.restartAPIServerWith("--watch-cache=false")
	w.hold(time.Second)
	for _, p := range w.kubeLinks {
		p.Cut()
	}
	w.hold(w.between(time.Second, 3*time.Second))
	w.tr.pause()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.hist.catchUp(ctx, w.h.dyn, w.types); err != nil {
		w.t.Fatalf("nemesis: %v", err)
	}
	rev := w.hist.seenUpTo()
	if _, err := w.env.Etcdctl(ctx, "compact", rev); err != nil {
		w.t.Fatalf("nemesis: etcdctl compact %s: %v", rev, err)
	}
	w.tr.resume()
	for _, p := range w.kubeLinks {
		p.Restore()
	}
	w.hold(3 * time.Second)
	w.restartAPIServerWith()
	f.end = time.Now()
	f.detail = fmt.Sprintf("watch cache off, the bridges' apiserver links cut, etcd compacted to %s, links back, watch cache on", rev)
}

// streamStepDown asks the stream's leader to step down, as `nats stream
// cluster step-down` does.
func (w *world) streamStepDown(f *faultSpan) {
	f.start = time.Now()
	// Only the stream's leader answers; right after another fault there
	// may be none for a moment.
	var msg *nats.Msg
	var err error
	for range 3 {
		if msg, err = w.h.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+w.h.stream, nil, 5*time.Second); err == nil {
			break
		}
	}
	f.end = time.Now()
	switch {
	case err != nil:
		f.detail = fmt.Sprintf("step-down request: %v", err)
	default:
		f.detail = "stream leader step-down: " + string(msg.Data)
	}
}

// bothDown kills both replicas and keeps them down while the traffic
// goes on: the next leader's start-up scan and snapshot must account for
// every change made meanwhile.
func (w *world) bothDown(f *faultSpan) {
	f.start = time.Now()
	for _, r := range w.replicas {
		r.held = true
		w.kill(r)
	}
	down := w.between(3*time.Second, 10*time.Second)
	w.hold(down)
	for _, r := range w.replicas {
		r.held = false
	}
	f.end = time.Now()
	f.detail = fmt.Sprintf("both replicas SIGKILLed and kept down for %v", down.Round(time.Millisecond))
}

// killInSnapshot kills the leader, and kills its successor the moment it
// publishes the first begin marker of its term: its start-up snapshot is
// left without its end marker.
func (w *world) killInSnapshot(f *faultSpan) {
	r, b := w.waitLeader(time.Minute)
	var next *bridge
	for _, o := range w.replicas {
		if o != r {
			next = o.running()
		}
	}
	if b == nil || next == nil {
		f.detail = "no leader and running standby"
		return
	}
	term := w.currentTerm()
	pid := next.cmd.Process.Pid
	killed := make(chan string, 1)
	sub, err := w.h.nc.Subscribe(w.h.prefix+".>", func(m *nats.Msg) {
		if m.Header.Get("ce-type") != contract.TypeSnapshotBegin {
			return
		}
		if t, _ := contract.TermOf(m.Header); t > term {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			select {
			case killed <- m.Subject:
			default:
			}
		}
	})
	if err != nil {
		w.t.Fatalf("nemesis: subscribe: %v", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	f.start = time.Now()
	// Held down until the successor is killed: it must be the one to
	// take the Lease.
	r.held = true
	w.kill(r)
	defer func() { r.held = false }()
	var subject string
	w.until(time.Minute, func() bool {
		select {
		case subject = <-killed:
			return true
		default:
			return false
		}
	})
	f.end = time.Now()
	f.detail = fmt.Sprintf("SIGKILL of the leader %s; its successor %s SIGKILLed at its begin marker on %s", b.name, next.name, subject)
}

// currentTerm is the newest term marker's sequence (0: none yet).
func (w *world) currentTerm() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := w.h.js.Stream(ctx, w.h.stream)
	if err != nil {
		return 0
	}
	m, err := s.GetLastMsgForSubject(ctx, w.h.prefix+"."+w.h.cluster+"._term")
	if err != nil {
		return 0
	}
	return m.Sequence
}

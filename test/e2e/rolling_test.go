package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestRollingUpdate replaces both replicas of a leader-elected pair while
// ConfigMaps are created, updated and deleted, the way the Deployment's
// RollingUpdate (maxSurge 1, maxUnavailable 0; deploy/kustomize/base)
// does: start a new replica, wait until it is a ready standby, stop an old
// one with SIGTERM; twice. An old replica that leads drains, releases the
// Lease and a standby takes over; one that does not lead exits without
// ever leading.
//
// Afterwards no change the apiserver made is lost (checkLedger, against a
// watch of the test's own), no resourceVersion goes back, the full replay
// and the last message per subject both equal the apiserver's list, no id
// is stored twice, snapshots are framed, every leader published exactly
// one start-up snapshot, and terms never interleave: each message carries
// the term of the last term marker before it, so only one replica
// published at a time.
func TestRollingUpdate(t *testing.T) {
	h := newHarness(t)
	typ := h.cmType()
	began := time.Now()
	led := h.watchConfigMaps()

	r := &rollout{h: h}
	a := r.first("pod-a")
	b := r.surge("pod-b")
	c := startChurn(h.cs, h.ns, 40, 5*time.Millisecond, 9)
	defer c.stop()
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled: %v, errors %v", c, c.stop())
	}

	// Step 1: a new replica, then the first old one goes.
	r.surge("pod-c")
	r.retire(a, c)
	// Step 2: another new replica, then the second old one goes.
	r.surge("pod-d")
	r.retire(b, c)
	if !c.waitOps(100, time.Minute) {
		t.Fatalf("churn stalled after the rollout: %v", c)
	}

	msgs, st := h.settle(c, typ, len(r.terms), "the last leader's start-up snapshot")
	defer logOnFailure(t, msgs)
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	r.checkLeaders()

	if len(st.Fenced) > 0 {
		t.Errorf("%d messages of an older term after a newer one began (two replicas published at once):\n    %s", len(st.Fenced), strings.Join(st.Fenced, "\n    "))
	}
	r.checkTerms(msgs)
	if ends := checkSnapshots(t, msgs); ends[typ] != len(r.terms) {
		t.Errorf("%d snapshots of %s, want %d: one start-up snapshot per term, none from a standby", ends[typ], typ, len(r.terms))
	}
	if n := checkSweeps(t, msgs, st); n > 0 {
		t.Logf("%d objects swept by a snapshot end just before their deleted event", n)
	}
	if never := checkDeletes(t, msgs, c.deletedUIDs()); never > 0 {
		t.Logf("%d deleted objects were never published", never)
	}
	tally := checkLedger(t, typ, msgs, led.upTo(h, want))
	t.Logf("ledger: %v", tally)

	last, err := h.lastPerSubject(typ + ".*.*")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffState(lastView(last), want); d != "" {
		t.Errorf("the last message per subject differs from the apiserver's list: %s", d)
	}
	t.Logf("%d messages, %d terms (%s), %d objects, %d swept; %v in all", len(msgs), len(r.terms), r.describeTerms(), len(want), len(st.Swept), time.Since(began).Round(time.Millisecond))
	for _, l := range r.log {
		t.Log(l)
	}
}

// rollout is a set of leader-elected bridge replicas, changed one at a
// time.
type rollout struct {
	h       *harness
	running []*replica
	leader  *replica
	terms   []*replica // who led, in order
	log     []string   // the handovers, for the test's log
}

// replica is one bridge process and its POD_NAME.
type replica struct {
	pod string
	b   *bridge
}

func (p *replica) String() string { return p.pod + " (" + p.b.name + ")" }

// first starts the replica that leads first and waits for its start-up
// snapshot.
func (r *rollout) first(pod string) *replica {
	r.h.t.Helper()
	p := &replica{pod: pod, b: r.h.startBridge(r.h.electionVars(pod))}
	if m := p.b.scrape(); m.sum("kubebridge_leader") != 1 {
		r.h.t.Fatalf("%s: kubebridge_leader %v after its start-up snapshot, want 1", p, m.sum("kubebridge_leader"))
	}
	r.running = append(r.running, p)
	r.leader = p
	r.terms = append(r.terms, p)
	return p
}

// surge starts a replica and waits until it is a ready standby, as a
// Deployment waits for a new pod's readiness before it stops an old one.
func (r *rollout) surge(pod string) *replica {
	r.h.t.Helper()
	p := &replica{pod: pod, b: r.h.launchBridge(r.h.electionVars(pod))}
	var code int
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, readyTimeout, true, func(context.Context) (bool, error) {
		if code, _, last = p.b.get("/readyz"); last == nil && code == http.StatusOK {
			return true, nil
		}
		if p.b.exited() {
			p.b.stopped.Store(true)
			return false, fmt.Errorf("%s exited (%v) before it was ready", p, p.b.state)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		r.h.t.Fatalf("%s is not ready after %v: /readyz %d %v", p, readyTimeout, code, last)
	} else if err != nil {
		r.h.t.Fatal(err)
	}
	checkStandby(r.h.t, p.b)
	r.running = append(r.running, p)
	r.h.t.Logf("%s: a ready standby", p)
	return p
}

// retire stops old with SIGTERM while c churns. If it leads, it must
// release the Lease once drained, and one of the others take over.
func (r *rollout) retire(old *replica, c *churn) {
	t := r.h.t
	t.Helper()
	if !c.waitOps(50, time.Minute) {
		t.Fatalf("churn stalled: %v", c)
	}
	r.running = slices.DeleteFunc(r.running, func(p *replica) bool { return p == old })
	leading := old == r.leader
	if !leading {
		checkStandby(t, old.b)
		old.b.stop()
		if strings.Contains(old.b.output(), "Leading:") {
			t.Errorf("%s led although %s held the Lease", old, r.leader)
		}
		r.log = append(r.log, old.String()+", a standby, stopped without leading")
		return
	}
	if m := old.b.scrape(); m.sum("kubebridge_leader") != 1 {
		t.Errorf("%s: kubebridge_leader %v on the leader", old, m.sum("kubebridge_leader"))
	}
	stopped := time.Now()
	old.b.stop()
	exited := time.Since(stopped)
	if !strings.Contains(old.b.output(), "Released the Lease") {
		t.Errorf("%s did not log that it released the Lease", old)
	}
	// Released, not left to expire: the holder is empty or a successor as
	// soon as the old leader is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	l, err := r.h.cs.CoordinationV1().Leases(r.h.ns).Get(ctx, r.h.leaseName(), metav1.GetOptions{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if hid := l.Spec.HolderIdentity; hid != nil && strings.HasPrefix(*hid, old.pod+"_") {
		t.Errorf("%s exited, but the Lease still names it as holder (%s): it was not released", old, *hid)
	}

	next := r.waitLeader()
	took := time.Since(stopped)
	r.leader = next
	r.terms = append(r.terms, next)
	line := ""
	for _, l := range lines(next.b.output()) {
		if strings.Contains(l, "First event published as leader") {
			line = l[strings.Index(l, "] ")+2:]
		}
	}
	handover := "?"
	if rel, ok := logTime(old.b.output(), "Released the Lease"); ok {
		if first, ok := logTime(next.b.output(), "First event published as leader"); ok {
			handover = first.Sub(rel).Round(time.Millisecond).String()
		}
	}
	r.log = append(r.log, old.String()+", the leader: SIGTERM to exit "+exited.Round(time.Millisecond).String()+
		"; Lease released to "+next.String()+"'s first event "+handover+" (log timestamps); SIGTERM to that first event "+
		took.Round(time.Millisecond).String()+" (log polled every 50ms); "+next.pod+" logs: "+line)
}

// waitLeader waits until one running replica publishes as the leader.
func (r *rollout) waitLeader() *replica {
	r.h.t.Helper()
	var leaders []*replica
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*readyTimeout, true, func(context.Context) (bool, error) {
		leaders = leaders[:0]
		for _, p := range r.running {
			if strings.Contains(p.b.output(), "First event published as leader") {
				leaders = append(leaders, p)
			}
			if p.b.exited() {
				p.b.stopped.Store(true)
				return false, fmt.Errorf("%s exited (%v) while waiting for a new leader", p, p.b.state)
			}
		}
		if len(leaders) > 1 {
			return false, fmt.Errorf("%d replicas lead at once: %v", len(leaders), leaders)
		}
		return len(leaders) == 1, nil
	})
	if wait.Interrupted(err) {
		r.h.t.Fatalf("no replica took over within %v", 2*readyTimeout)
	} else if err != nil {
		r.h.t.Fatal(err)
	}
	return leaders[0]
}

// checkLeaders: of the running replicas only the last leader leads, once,
// and the others never did.
func (r *rollout) checkLeaders() {
	t := r.h.t
	t.Helper()
	for _, p := range r.running {
		m := p.b.scrape()
		wantLeader, wantTransitions := 0.0, 0.0
		if p == r.leader {
			wantLeader, wantTransitions = 1, 1
		}
		if got, tr := m.sum("kubebridge_leader"), m.sum("kubebridge_leadership_transitions_total"); got != wantLeader || tr != wantTransitions {
			t.Errorf("%s: kubebridge_leader %v, transitions %v; want %v, %v", p, got, tr, wantLeader, wantTransitions)
		}
		if p != r.leader && (strings.Contains(p.b.output(), "Leading:") || m.sum("kubebridge_events_published_total") != 0) {
			t.Errorf("%s led or published although it never held the Lease", p)
		}
	}
}

// checkTerms: one term marker per leader, in order and naming it, and
// every other message carries the term of the last marker before it.
func (r *rollout) checkTerms(msgs []replay.Message) {
	t := r.h.t
	t.Helper()
	var markers []replay.Message
	var term uint64
	wrong := 0
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeTerm {
			markers = append(markers, m)
			term = m.Seq
			continue
		}
		if got := termOf(m); got != term {
			if wrong++; wrong <= 5 {
				t.Errorf("seq %d %s %s: term %d, but the last term marker before it is seq %d", m.Seq, m.Event.Type(), m.Subject, got, term)
			}
		}
	}
	if wrong > 5 {
		t.Errorf("... %d messages in all with another term than the last marker's", wrong)
	}
	if len(markers) != len(r.terms) {
		t.Errorf("%d term markers, want %d (leaders: %s)", len(markers), len(r.terms), r.describeTerms())
		return
	}
	for i, m := range markers {
		if holder := m.Event.Subject(); !strings.HasPrefix(holder, r.terms[i].pod+"_") {
			t.Errorf("term marker %d (seq %d) names holder %q, want %s", i+1, m.Seq, holder, r.terms[i])
		}
	}
}

func (r *rollout) describeTerms() string {
	var s []string
	for _, p := range r.terms {
		s = append(s, p.pod)
	}
	return strings.Join(s, " → ")
}

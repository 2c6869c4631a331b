package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// pod is one bridge pod of the run: a POD_NAME and the process that
// runs under it now. Like the kubelet, the run starts a new process when
// one exits (a deposed leader exits 1 by design), a second later, unless
// the nemesis holds the pod down.
type robustPod struct {
	pod  string
	vars map[string]string
	b    *bridge // nil while down

	held      bool // the nemesis keeps it down
	frozen    bool // SIGSTOPped: not sampled, not restarted
	restartAt time.Time
	starts    int
	exits     []string // how each process ended, in order
}

// running is the pod's process, when it runs and is not frozen.
func (r *robustPod) running() *bridge {
	if r.b == nil || r.frozen || r.b.exited() {
		return nil
	}
	return r.b
}

// supervise restarts the replicas whose process ended, and samples the
// running ones once a second. Every wait of the run calls it.
func (w *world) supervise() {
	now := time.Now()
	for _, r := range w.replicas {
		if r.b != nil && r.b.exited() && !r.frozen {
			r.b.stopped.Store(true)
			r.exits = append(r.exits, fmt.Sprintf("%s %v at %s", r.b.name, r.b.state, w.offset(now)))
			w.note("%s (%s) exited: %v", r.pod, r.b.name, r.b.state)
			r.b, r.restartAt = nil, now.Add(time.Second)
		}
		if r.b == nil && !r.held && !now.Before(r.restartAt) {
			w.launch(r)
		}
	}
	if now.Sub(w.lastSample) >= time.Second {
		w.lastSample = now
		for _, r := range w.replicas {
			// A process without /metrics yet (just started) is not
			// sampled: its first readings would be its start's zeros.
			if b := r.running(); b != nil {
				if s := sampleBridge(b, r.pod, now); s.goroutines > 0 {
					w.samples = append(w.samples, s)
				}
			}
		}
	}
}

func (w *world) launch(r *robustPod) {
	r.starts++
	r.b = w.h.launchBridge(r.vars)
	w.procs = append(w.procs, &robustProc{b: r.b, started: time.Now()})
	w.note("%s started as %s", r.pod, r.b.name)
}

// hold lets d pass, supervising meanwhile: how long a fault lasts is the
// behaviour under test, not a wait for something.
func (w *world) hold(d time.Duration) {
	_ = w.until(d, func() bool { return false })
}

// until supervises until cond holds or timeout passes, and says whether
// cond held.
func (w *world) until(timeout time.Duration, cond func() bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		w.supervise()
		return cond(), nil
	})
	return err == nil
}

// leader is the pod whose running process holds the Lease, and that
// process (nil, nil when no running, unfrozen process holds it).
func (w *world) leader() (*robustPod, *bridge) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := w.h.cs.CoordinationV1().Leases(w.leaseNamespace).Get(ctx, w.leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return nil, nil
	}
	for _, r := range w.replicas {
		// The holder is a process, not a pod: client-go's identity is
		// the pod's name and a random suffix, which the bridge logs.
		if b := r.running(); b != nil {
			if m := identityLine.FindStringSubmatch(b.output()); m != nil && m[1] == *l.Spec.HolderIdentity {
				return r, b
			}
		}
	}
	return nil, nil
}

// identityLine is how a bridge logs its leader election identity.
var identityLine = regexp.MustCompile(`"Leader election on: [^"]*".* identity="([^"]+)"`)

// waitLeader waits until a running pod holds the Lease and says it
// leads.
func (w *world) waitLeader(timeout time.Duration) (*robustPod, *bridge) {
	var r *robustPod
	var b *bridge
	w.until(timeout, func() bool {
		r, b = w.leader()
		return b != nil && strings.Contains(b.output(), "Leading:")
	})
	return r, b
}

func signal(b *bridge, sig syscall.Signal) {
	_ = b.cmd.Process.Signal(sig)
}

// sampleBridge reads a bridge's resident memory from /proc and its
// goroutines from /metrics, without failing: a process may be gone or
// unresponsive by the time it is asked.
func sampleBridge(b *bridge, pod string, at time.Time) procSample {
	s := procSample{at: at, bridge: pod}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 64)
				s.rssBytes = n * 1024
			}
		}
	}
	m := listenLine.FindStringSubmatch(b.output())
	if m == nil {
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m[1]+"/metrics", nil)
	if err != nil {
		return s
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return s
	}
	if parsed, err := parseMetrics(string(body)); err == nil {
		s.goroutines = parsed.sum("go_goroutines")
	}
	return s
}

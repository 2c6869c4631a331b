package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// cluster is the BRIDGE_CLUSTER_NAME of the bridges the tests start
// (unless a harness names another, see harness.cluster).
const cluster = "e2e"

// Bounds of the waits. They are generous: the machine may be small and
// the bridge may run with the race detector.
const (
	readyTimeout    = 90 * time.Second
	stopTimeout     = 60 * time.Second // BRIDGE_SHUTDOWN_TIMEOUT (20s) + drain + slack
	convergeTimeout = 90 * time.Second
)

// harnessSeq makes stream names and subject prefixes unique within one test
// binary, also across -count=N.
var harnessSeq atomic.Int64

// harness is one test's view of an environment: clients, a namespace of
// its own, and a subject prefix and stream of its own in the shared NATS.
type harness struct {
	t       *testing.T
	env     *testenv.Env
	natsURL string // where the bridges and the reader connect
	natsCA  string // the CA the reader and the CLI trust, if NATS serves TLS
	cluster string // BRIDGE_CLUSTER_NAME of its bridges
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	ns      string
	prefix  string
	stream  string
	nc      *nats.Conn
	js      jetstream.JetStream

	bridges int
}

// newHarness sets up a harness on the shared environment (testenv.Get)
// and its NATS server.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessIn(t, testenv.Get(t))
}

// newHarnessIn is newHarness on an environment of the test's own.
func newHarnessIn(t *testing.T, env *testenv.Env) *harness {
	t.Helper()
	return newHarnessOn(t, env, env.NATSURL())
}

// newHarnessOn is newHarness with the bridges and the reader on the NATS
// servers at natsURL (comma-separated, as NATS_URL takes them); readerOpts
// are added to the reader's connection (credentials).
func newHarnessOn(t *testing.T, env *testenv.Env, natsURL string, readerOpts ...nats.Option) *harness {
	t.Helper()
	if bridgeBin == "" {
		t.Fatal("the bridge binary was not built (TestMain's Setup did not run)")
	}
	n := harnessSeq.Add(1)
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "-"))
	if len(name) > 40 {
		name = name[:40]
	}
	h := &harness{
		t:       t,
		env:     env,
		natsURL: natsURL,
		cluster: cluster,
		prefix:  fmt.Sprintf("e2e%d-%s", n, name),
		stream:  fmt.Sprintf("E2E_%d_%s", n, strings.ReplaceAll(strings.ToUpper(name), "-", "_")),
	}
	kube := env.Clients(t)
	h.cs, h.dyn = kube.Kube, kube.Dynamic
	h.ns = h.newNamespace()

	var err error
	h.nc, err = nats.Connect(natsURL, append([]nats.Option{nats.Name("e2e-reader"), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.RetryOnFailedConnect(true)}, readerOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if h.js, err = jetstream.New(h.nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Keep the stream of a failed test for inspection
		// ($KUBEBRIDGE_KEEP_TESTENV=1); else free the shared server.
		if !t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = h.js.DeleteStream(ctx, h.stream)
			cancel()
		}
		h.nc.Close()
	})
	t.Logf("namespace %s, subject prefix %s, stream %s", h.ns, h.prefix, h.stream)
	return h
}

// newNamespace creates a namespace that is deleted (without waiting) when
// the test ends.
func (h *harness) newNamespace() string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := h.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create namespace: %v", err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// ---- subjects ----

// typeSubject is the subject prefix of one resource type, spelled out
// from the README rather than computed by the bridge's own code.
func (h *harness) typeSubject(group, version, resource string) string {
	if group == "" {
		group = "core"
	}
	return h.prefix + "." + h.cluster + "." + strings.ReplaceAll(group, ".", "_") + "." + version + "." + resource
}

// cmType is the configmaps type subject.
func (h *harness) cmType() string { return h.typeSubject("", "v1", "configmaps") }

// cmSubject is the subject of a ConfigMap (names in the tests need no
// escaping).
func (h *harness) cmSubject(ns, name string) string { return h.cmType() + "." + ns + "." + name }

// ---- the bridge process ----

// bridge is one run of the bridge binary.
type bridge struct {
	h      *harness
	name   string
	cmd    *exec.Cmd
	stdout string
	stderr string
	done   chan struct{}
	state  *os.ProcessState // valid once done is closed
	// stopped is set once the test stopped (or killed) the process itself.
	stopped atomic.Bool
}

// bridgeEnv is the complete environment of a bridge: nothing is inherited
// from the test process but PATH, HOME and TMPDIR, so a developer's own
// BRIDGE_* or NATS_* variables cannot leak in. A value "" in vars removes
// the variable.
func (h *harness) bridgeEnv(vars map[string]string) []string {
	m := map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
		"TMPDIR":                os.TempDir(),
		"KUBECONFIG":            h.env.KubeconfigPath(),
		"NATS_URL":              h.natsURL,
		"BRIDGE_CLUSTER_NAME":   h.cluster,
		"BRIDGE_SUBJECT_PREFIX": h.prefix,
		"BRIDGE_STREAM_NAME":    h.stream,
		"BRIDGE_NAMESPACES":     h.ns,
		// A port of its own (logged, see endpoint), so bridges never
		// compete for :8080 and tests can read /metrics and /readyz.
		"BRIDGE_HTTP_ADDR": "127.0.0.1:0",
		// The tests read the stream as the history of everything
		// published: a stream that keeps every message, and deletes that
		// never expire, so without the roll-up that would purge a deleted
		// object's earlier events. The compaction and TTL tests remove
		// these ("") to run with the defaults.
		"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "-1",
		"BRIDGE_TOMBSTONE_TTL":               "0",
	}
	if raceEnabled {
		// The first data race ends the bridge with exit code 66.
		m["GORACE"] = "halt_on_error=1"
	}
	for k, v := range vars {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return environ(m)
}

// environ is env as a process's environment: KEY=value, sorted.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// launchBridge starts the bridge without waiting for it. Unless the test
// stops it, it is stopped with SIGTERM at the end of the test, which must
// make it exit 0. Its output is logged if the test fails.
func (h *harness) launchBridge(vars map[string]string) *bridge {
	h.t.Helper()
	h.bridges++
	name := fmt.Sprintf("bridge-%d", h.bridges)
	dir := h.t.TempDir()
	b := &bridge{h: h, name: name, stdout: filepath.Join(dir, name+".stdout"), stderr: filepath.Join(dir, name+".stderr"), done: make(chan struct{})}
	outF, err := os.Create(b.stdout)
	if err != nil {
		h.t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(b.stderr)
	if err != nil {
		h.t.Fatal(err)
	}
	defer errF.Close()
	b.cmd = exec.Command(bridgeBin)
	b.cmd.Env = h.bridgeEnv(vars)
	b.cmd.Stdout, b.cmd.Stderr = outF, errF
	b.cmd.SysProcAttr = sysProcAttr()
	// On a locked thread: see testenv.StartLocked.
	waited, err := testenv.StartLocked(b.cmd)
	if err != nil {
		h.t.Fatalf("start bridge: %v", err)
	}
	go func() {
		<-waited
		b.state = b.cmd.ProcessState
		close(b.done)
	}()
	// Cleanups run last-in first-out: the output is printed after the stop.
	h.t.Cleanup(func() {
		if h.t.Failed() {
			h.t.Logf("==== %s environment:\n    %s", name, strings.Join(b.cmd.Env, "\n    "))
			h.t.Logf("==== %s output (stderr, then stdout):\n%s", name, b.output())
		}
	})
	h.t.Cleanup(func() {
		if !b.stopped.Load() {
			b.stop()
		}
	})
	return b
}

// startBridge launches the bridge and waits until its start-up snapshots
// are published.
func (h *harness) startBridge(vars map[string]string) *bridge {
	h.t.Helper()
	b := h.launchBridge(vars)
	b.waitLog("Start-up snapshots published", readyTimeout)
	return b
}

// output is the bridge's stderr (where klog writes) and stdout.
func (b *bridge) output() string {
	e, _ := os.ReadFile(b.stderr)
	o, _ := os.ReadFile(b.stdout)
	s := string(e)
	if len(o) > 0 {
		s += "---- stdout:\n" + string(o)
	}
	return s
}

func (b *bridge) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// waitLog waits until the bridge's output contains substr. It fails the
// test if the bridge exits first or the time runs out.
func (b *bridge) waitLog(substr string, timeout time.Duration) {
	b.h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if strings.Contains(b.output(), substr) {
			return true, nil
		}
		if b.exited() {
			b.stopped.Store(true)
			return false, fmt.Errorf("%s exited (%v) before logging %q", b.name, b.state, substr)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		b.h.t.Fatalf("%s did not log %q within %v", b.name, substr, timeout)
	}
	if err != nil {
		b.h.t.Fatal(err)
	}
}

// waitExit waits for the process to end and returns its exit code (-1 when
// killed by a signal).
func (b *bridge) waitExit(timeout time.Duration) (int, bool) {
	select {
	case <-b.done:
		return b.state.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// stop sends SIGTERM and requires exit code 0 within stopTimeout.
func (b *bridge) stop() {
	b.h.t.Helper()
	b.stopped.Store(true)
	if b.exited() {
		b.h.t.Errorf("%s had already exited before SIGTERM: %v", b.name, b.state)
		return
	}
	start := time.Now()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	code, ok := b.waitExit(stopTimeout)
	if !ok {
		_ = b.cmd.Process.Kill()
		<-b.done
		b.h.t.Errorf("%s did not exit within %v of SIGTERM; killed", b.name, stopTimeout)
		return
	}
	if code != 0 {
		b.h.t.Errorf("%s exited with %v after SIGTERM, want exit code 0", b.name, b.state)
		return
	}
	b.h.t.Logf("%s: SIGTERM -> exit 0 in %v", b.name, time.Since(start).Round(time.Millisecond))
}

// kill sends SIGKILL and waits for the process to be gone.
func (b *bridge) kill() {
	b.h.t.Helper()
	b.stopped.Store(true)
	if b.exited() {
		b.h.t.Fatalf("%s had already exited before SIGKILL: %v", b.name, b.state)
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	if ws, ok := b.state.Sys().(syscall.WaitStatus); ok && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) {
		b.h.t.Errorf("%s: after SIGKILL the wait status is %v", b.name, b.state)
	}
}

// ---- reading the stream ----

// read returns every message of the test's stream, decoded with sdk-go.
func (h *harness) read() ([]replay.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// This cluster's messages: a stream may hold several clusters', and
	// terms are per cluster.
	msgs, err := replay.ReadAll(ctx, h.js, h.stream, h.prefix+"."+h.cluster+".>")
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	return msgs, err
}

// mustRead is read, retrying errors for a while (NATS may just be back).
func (h *harness) mustRead() []replay.Message {
	h.t.Helper()
	var msgs []replay.Message
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		msgs, last = h.read()
		return last == nil, nil
	})
	if err != nil {
		h.t.Fatalf("reading stream %s for 30s: %v", h.stream, last)
	}
	return msgs
}

// waitStream polls the stream until cond returns "" for its messages and
// returns them. cond describes what is still missing otherwise; the last
// description is part of the failure.
func (h *harness) waitStream(what string, timeout time.Duration, cond func([]replay.Message) string) []replay.Message {
	h.t.Helper()
	msgs, missing := h.pollStream(timeout, cond)
	if missing != "" {
		h.t.Fatalf("timed out after %v waiting for %s: %s (%d messages in the stream)", timeout, what, missing, len(msgs))
	}
	return msgs
}

// pollStream is waitStream without failing: it returns the last messages
// read and what was still missing at the timeout ("" if cond held).
func (h *harness) pollStream(timeout time.Duration, cond func([]replay.Message) string) ([]replay.Message, string) {
	h.t.Helper()
	var msgs []replay.Message
	var missing string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		if msgs, err = h.read(); err != nil {
			missing = "read error: " + err.Error()
		} else {
			missing = cond(msgs)
		}
		return missing == "", nil
	})
	return msgs, missing
}

// waitEvent waits until the stream holds an event of type ceType on
// subject, at resourceVersion rv unless rv is "". Tests that check every
// event of one object's changes make the next change only then: changes
// of one object pending together may be coalesced into one event (README,
// the coalesced extension).
func (h *harness) waitEvent(subject, ceType, rv string) {
	h.t.Helper()
	h.waitStream(fmt.Sprintf("%s on %s (rv %q)", ceType, subject, rv), 30*time.Second, func(msgs []replay.Message) string {
		for _, m := range ofType(onSubject(msgs, subject), ceType, "") {
			if rv == "" || m.Ext(contract.ExtResourceVersion) == rv {
				return ""
			}
		}
		return "not yet"
	})
}

// logOnFailure logs msgs if the test failed (use with defer).
func logOnFailure(t *testing.T, msgs []replay.Message) {
	if t.Failed() {
		t.Logf("stream (%d messages):\n%s", len(msgs), describe(msgs))
	}
}

// subjects are the subjects of the harness's cluster.
func (h *harness) subjects() contract.Subjects {
	return contract.Subjects{Prefix: h.prefix, Cluster: h.cluster}
}

// applyAll replays msgs as the reference consumer does.
func (h *harness) applyAll(t *testing.T, msgs []replay.Message) *replay.State {
	t.Helper()
	st := replay.NewState(h.subjects())
	for _, m := range msgs {
		if err := st.Apply(m); err != nil {
			t.Fatalf("replay: seq %d %s %s: %v", m.Seq, m.Event.Type(), m.Subject, err)
		}
	}
	return st
}

// tryApply is applyAll for polling conditions.
func (h *harness) tryApply(msgs []replay.Message) (*replay.State, error) {
	st := replay.NewState(h.subjects())
	for _, m := range msgs {
		if err := st.Apply(m); err != nil {
			return nil, fmt.Errorf("seq %d %s %s: %w", m.Seq, m.Event.Type(), m.Subject, err)
		}
	}
	return st, nil
}

// ofType returns the messages whose ce-type is typ and whose subject starts
// with prefix ("" for any).
func ofType(msgs []replay.Message, typ, prefix string) []replay.Message {
	var out []replay.Message
	for _, m := range msgs {
		if m.Event.Type() == typ && strings.HasPrefix(m.Subject, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// onSubject returns the messages on one subject.
func onSubject(msgs []replay.Message, subject string) []replay.Message {
	var out []replay.Message
	for _, m := range msgs {
		if m.Subject == subject {
			out = append(out, m)
		}
	}
	return out
}

// describe lists messages one a line, for failure output.
func describe(msgs []replay.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "    seq %d %s %s id=%s rv=%s", m.Seq, strings.TrimPrefix(m.Event.Type(), "io.kubebridge."), m.Subject, m.Event.ID(), m.Ext(contract.ExtResourceVersion))
		if c, ok := m.Event.Extensions()[replay.ExtCoalesced]; ok {
			fmt.Fprintf(&b, " coalesced=%v", c)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// stateOf is a replayed state restricted to one type, as subject → rv.
func stateOf(st *replay.State, typ string) map[string]string {
	out := map[string]string{}
	for subj, o := range st.Objects {
		if o.Type == typ {
			out[subj] = o.ResourceVersion
		}
	}
	return out
}

// diffState describes how got differs from want ("" if equal).
func diffState(got, want map[string]string) string {
	var lines []string
	for subj, rv := range want {
		if g, ok := got[subj]; !ok {
			lines = append(lines, fmt.Sprintf("missing %s (rv %s)", subj, rv))
		} else if g != rv {
			lines = append(lines, fmt.Sprintf("%s: stream rv %s, apiserver rv %s", subj, g, rv))
		}
	}
	for subj, rv := range got {
		if _, ok := want[subj]; !ok {
			lines = append(lines, fmt.Sprintf("extra %s (rv %s) not in the apiserver's list", subj, rv))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	n := len(lines)
	if n > 15 {
		lines = append(lines[:15], "...")
	}
	return fmt.Sprintf("%d differences: %s", n, strings.Join(lines, "; "))
}

// historyOfDifferences lists the stream's messages on up to three subjects
// where got and want differ, and what the replay recorded of them (swept,
// fenced, foreign, regressions), so that a failed convergence says why.
func historyOfDifferences(msgs []replay.Message, st *replay.State, got, want map[string]string) string {
	var subjects []string
	for subj, rv := range want {
		if got[subj] != rv {
			subjects = append(subjects, subj)
		}
	}
	for subj := range got {
		if _, ok := want[subj]; !ok {
			subjects = append(subjects, subj)
		}
	}
	sort.Strings(subjects)
	var b strings.Builder
	for _, subj := range subjects[:min(len(subjects), 3)] {
		b.WriteString(subjectHistory(msgs, subj))
		for _, list := range [][]string{st.Swept, st.Fenced, st.Foreign, st.Regressions} {
			for _, l := range list {
				if strings.Contains(l, subj) {
					fmt.Fprintf(&b, "\n    replay: %s", l)
				}
			}
		}
	}
	return b.String()
}

// subjectHistory lists the stream's messages on subj, one line each.
func subjectHistory(msgs []replay.Message, subj string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  history of %s:", subj)
	for _, m := range msgs {
		if m.Subject == subj {
			fmt.Fprintf(&b, "\n    seq %d %s uid %s rv %s term %s snapshot %s finalstateunknown %s coalesced %s", m.Seq, strings.TrimPrefix(m.Event.Type(), "io.kubebridge."),
				m.Ext(contract.ExtUID), m.Ext(contract.ExtResourceVersion), m.Ext(contract.ExtTerm), m.Ext(contract.ExtSnapshotID), m.Ext(contract.ExtFinalStateUnknown), m.Ext(contract.ExtCoalesced))
		}
	}
	return b.String()
}

// convergeTo waits until replaying the stream gives want for type typ, and
// returns the messages and the state.
func (h *harness) convergeTo(typ string, want func() map[string]string, extra func(*replay.State) string) ([]replay.Message, *replay.State) {
	h.t.Helper()
	var st *replay.State
	msgs := h.waitStream("the replayed state to equal the apiserver's list", convergeTimeout, func(msgs []replay.Message) string {
		s, err := h.tryApply(msgs)
		if err != nil {
			return err.Error()
		}
		got, w := stateOf(s, typ), want()
		if d := diffState(got, w); d != "" {
			return d + historyOfDifferences(msgs, s, got, w)
		}
		if extra != nil {
			if d := extra(s); d != "" {
				return d
			}
		}
		st = s
		return ""
	})
	return msgs, st
}

// settle stops the churn (failing on its errors), waits until replaying
// the stream gives the apiserver's list of type typ with at least
// snapshots complete snapshots (why names the one awaited), and checks the
// invariants every churn test asks for: no regression per uid, framed
// snapshots, unique ids.
func (h *harness) settle(c *churn, typ string, snapshots int, why string) ([]replay.Message, *replay.State) {
	h.t.Helper()
	if errs := c.stop(); len(errs) > 0 {
		h.t.Fatalf("churn: %d errors, first: %v", len(errs), errs[0])
	}
	h.t.Logf("churn: %v", c)
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	msgs, st := h.convergeTo(typ, func() map[string]string { return want }, func(s *replay.State) string {
		if s.Snapshots[typ] < snapshots {
			return why + " is not complete"
		}
		return ""
	})
	checkNoRegressions(h.t, st)
	checkSnapshots(h.t, msgs)
	checkUniqueIDs(h.t, msgs)
	return msgs, st
}

// checkSnapshots checks the framing of every snapshot in msgs: each end
// has its begin, and its snapshotcount is the number of its items in the
// stream. It returns the number of complete snapshots per type.
func checkSnapshots(t *testing.T, msgs []replay.Message) map[string]int {
	t.Helper()
	items := map[string]int{}
	begun := map[string]bool{}
	ends := map[string]int{}
	for _, m := range msgs {
		id := m.Ext(contract.ExtSnapshotID)
		switch m.Event.Type() {
		case contract.TypeSnapshotBegin:
			if begun[id] {
				t.Errorf("seq %d: second begin marker of snapshot %s", m.Seq, id)
			}
			begun[id] = true
		case contract.TypeSnapshotItem:
			if !begun[id] {
				t.Errorf("seq %d: item of snapshot %s before its begin marker", m.Seq, id)
			}
			items[id]++
		case contract.TypeSnapshotEnd:
			if !begun[id] {
				t.Errorf("seq %d: end marker of snapshot %s without its begin", m.Seq, id)
			}
			if got := m.Ext(contract.ExtSnapshotCount); got != fmt.Sprint(items[id]) {
				t.Errorf("seq %d: snapshot %s: snapshotcount %s, but %d items of it in the stream", m.Seq, id, got, items[id])
			}
			ends[strings.TrimSuffix(m.Subject, "._snapshot.end")]++
		}
	}
	return ends
}

// objectID is the id of an object event or snapshot item, as the README
// specifies: <resource>.<version>[.<group>]/<uid>/<resourceVersion>/<verb>,
// where verb is added, updated, deleted or snapshot.item/<snapshotid>;
// added, updated and deleted ids end in /<term> as well (see termID).
// The resource is part of it so one object watched under two aliased
// types (horizontalpodautoscalers v1 and v2) gets distinct ids.
func objectID(resource, uid, rv, verb string) string {
	return resource + "/" + uid + "/" + rv + "/" + verb
}

// termID is the id of a live event whose id without the term is id: the
// term of the bridge that published it follows.
func termID(id string, m replay.Message) string { return id + "/" + m.Ext(contract.ExtTerm) }

// cmID is objectID for a ConfigMap.
func cmID(uid, rv, verb string) string { return objectID("configmaps.v1", uid, rv, verb) }

// msgID is the Nats-Msg-Id (JetStream's de-duplication key) of the event
// with id: <cluster>/<id>, as the README specifies.
func msgID(id string) string { return cluster + "/" + id }

// termsOf returns the terms begun in msgs (term marker sequences, in order)
// and, by sequence, every message stored after a newer term had begun but
// written in an older one: what a deposed leader managed to store. Consumers ignore
// those under the term rule; the bridge's fence keeps them off every
// subject the newer term has written.
func termsOf(t *testing.T, msgs []replay.Message) (terms []uint64, late map[uint64]string) {
	late = map[uint64]string{}
	t.Helper()
	var current uint64
	for _, m := range msgs {
		if m.Event.Type() == contract.TypeTerm {
			current = m.Seq
			terms = append(terms, m.Seq)
			continue
		}
		term, err := contract.TermOf(m.Header)
		if err != nil {
			t.Errorf("seq %d: %v", m.Seq, err)
			continue
		}
		if term == 0 {
			t.Errorf("seq %d %s %s carries no term", m.Seq, m.Event.Type(), m.Subject)
		}
		if term < current {
			late[m.Seq] = fmt.Sprintf("seq %d %s %s rv %s: term %d after term %d began", m.Seq, m.Event.Type(), m.Subject, m.Ext(contract.ExtResourceVersion), term, current)
		}
	}
	return terms, late
}

// checkUniqueIDs requires every event id to be stored once: JetStream
// drops re-publishes with the same Nats-Msg-Id, and the same change always
// gets the same id.
func checkUniqueIDs(t *testing.T, msgs []replay.Message) {
	t.Helper()
	seen := map[string]uint64{}
	change := map[string]string{} // type+subject+rv → id
	var badMsgID []string
	// Stored by a deposed leader after a newer term began: consumers
	// ignore these, and the new leader publishes the same changes again
	// under its own term.
	_, late := termsOf(t, msgs)
	for _, m := range msgs {
		id := m.Event.ID()
		if prev, ok := seen[id]; ok {
			t.Errorf("event id %s stored twice (seq %d and %d)", id, prev, m.Seq)
		}
		seen[id] = m.Seq
		// <cluster>/<id>, with the cluster that wrote it.
		if hid := m.Header.Get(contract.HeaderMsgID); hid != m.Ext(contract.ExtCluster)+"/"+id {
			badMsgID = append(badMsgID, fmt.Sprintf("seq %d: Nats-Msg-Id %q, ce-id %q", m.Seq, hid, id))
		}
		switch m.Event.Type() {
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
			if late[m.Seq] != "" {
				continue
			}
			key := m.Event.Type() + " " + m.Subject + " " + m.Ext(contract.ExtResourceVersion)
			if prev, ok := change[key]; ok {
				t.Errorf("change %s stored twice, with ids %s and %s", key, prev, id)
			}
			change[key] = id
		}
	}
	if len(badMsgID) > 0 {
		t.Errorf("%d of %d messages have a Nats-Msg-Id other than <cluster>/<id> (README), e.g.\n    %s",
			len(badMsgID), len(msgs), strings.Join(badMsgID[:min(3, len(badMsgID))], "\n    "))
	}
}

// checkSweeps fails for every object a snapshot end removed from the
// replayed state although no change was lost. A sweep is then only allowed
// to pre-empt a delete that is itself in the stream: the informer's
// indexer runs ahead of the handler queue, so a snapshot listed after an
// object was deleted may end before the deleted event is published. A
// swept object whose delete never reached the stream is a lost change. It
// returns the number of pre-empted deletes.
func checkSweeps(t *testing.T, msgs []replay.Message, st *replay.State) int {
	t.Helper()
	uidOf := map[string]string{} // "subject rv" → uid
	deleted := map[string]bool{} // uid → a deleted event exists
	for _, m := range msgs {
		if uid := m.Ext(contract.ExtUID); uid != "" {
			uidOf[m.Subject+" "+m.Ext(contract.ExtResourceVersion)] = uid
			if m.Event.Type() == contract.TypeDeleted {
				deleted[uid] = true
			}
		}
	}
	var lost []string
	for _, sw := range st.Swept {
		if uid := uidOf[sw]; uid == "" || !deleted[uid] {
			lost = append(lost, sw)
		}
	}
	if len(lost) > 0 {
		var history string
		for _, sw := range lost[:min(len(lost), 3)] {
			subj, _, _ := strings.Cut(sw, " ")
			history += subjectHistory(msgs, subj)
		}
		t.Errorf("%d objects swept by a snapshot end whose delete never reached the stream (no change was lost, so every delete must be published):\n    %s%s",
			len(lost), strings.Join(lost, "\n    "), history)
	}
	return len(st.Swept) - len(lost)
}

// checkDeletes checks every object deleted through the API (by uid) from
// a consumer's point of view: a deleted event of its uid is in the stream,
// or no message carries its uid at all (the informer never saw it: created
// and deleted within a gap its relist closed). A uid that was
// published but never deleted is a lost delete. It returns how many
// deleted objects never appeared.
func checkDeletes(t *testing.T, msgs []replay.Message, deleted []string) int {
	t.Helper()
	seen := map[string]bool{}
	gone := map[string]bool{}
	for _, m := range msgs {
		if uid := m.Ext(contract.ExtUID); uid != "" {
			seen[uid] = true
			if m.Event.Type() == contract.TypeDeleted {
				gone[uid] = true
			}
		}
	}
	var lost []string
	never := 0
	for _, uid := range deleted {
		switch {
		case gone[uid]:
		case seen[uid]:
			lost = append(lost, uid)
		default:
			never++
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d deleted objects are in the stream without a deleted event, e.g. uid %s", len(lost), len(deleted), lost[0])
	}
	return never
}

// liveEvents returns the added, updated and deleted events among msgs.
func liveEvents(msgs []replay.Message) []replay.Message {
	var out []replay.Message
	for _, m := range msgs {
		switch m.Event.Type() {
		case contract.TypeAdded, contract.TypeUpdated, contract.TypeDeleted:
			out = append(out, m)
		}
	}
	return out
}

// checkNoRegressions fails on any resourceVersion regression.
func checkNoRegressions(t *testing.T, st *replay.State) {
	t.Helper()
	if len(st.Regressions) > 0 {
		t.Errorf("%d resourceVersion regressions:\n    %s", len(st.Regressions), strings.Join(st.Regressions, "\n    "))
	}
}

// ---- Kubernetes helpers ----

// listConfigMaps is the apiserver's configmaps in ns as subject → rv.
func (h *harness) listConfigMaps(ns string, opts metav1.ListOptions) map[string]string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := h.cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		h.t.Fatalf("list configmaps in %s: %v", ns, err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[h.cmSubject(cm.Namespace, cm.Name)] = cm.ResourceVersion
	}
	return out
}

func (h *harness) createCM(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := h.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (h *harness) updateCM(cm *corev1.ConfigMap) *corev1.ConfigMap {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.cs.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("update configmap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}

func (h *harness) deleteCM(ns, name string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete configmap %s/%s: %v", ns, name, err)
	}
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// klogLine matches klog's header: "I0102 15:04:05.000000   12345 file.go:12] ".
var klogLine = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^ ]+:\d+\] `)

// countLog counts the lines of the bridge's output containing substr.
func (b *bridge) countLog(substr string) int {
	n := 0
	for _, l := range lines(b.output()) {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// rawContains reports where msgs' raw bytes (subject, headers, data)
// contain needle.
func rawContains(msgs []replay.Message, needle []byte) []string {
	var where []string
	for _, m := range msgs {
		if bytes.Contains([]byte(m.Subject), needle) {
			where = append(where, fmt.Sprintf("seq %d subject", m.Seq))
		}
		for k, vs := range m.Header {
			if bytes.Contains([]byte(k), needle) {
				where = append(where, fmt.Sprintf("seq %d header name %s", m.Seq, k))
			}
			for _, v := range vs {
				if bytes.Contains([]byte(v), needle) {
					where = append(where, fmt.Sprintf("seq %d header %s", m.Seq, k))
				}
			}
		}
		if bytes.Contains(m.Data, needle) {
			where = append(where, fmt.Sprintf("seq %d data", m.Seq))
		}
	}
	return where
}

// must fails t on err.
func must(t interface{ Fatal(...any) }, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

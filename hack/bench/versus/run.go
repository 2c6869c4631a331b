package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
)

// runChild runs mode m in a fresh process: the first measurement once it is
// ready, then, with -churn, the churn and a second measurement. seq makes
// each run's updates differ from the previous run's, so none is a no-op.
func (b *bench) runChild(ctx context.Context, m mode, seq int) (run, error) {
	fmt.Fprintf(os.Stderr, "==== %s: %s\n", m.id(), m.label)
	out := run{m: m}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if m.kind.publishes() {
		if err := removeStream(ctx, b.env.NATSURL(), streamName(m)); err != nil {
			return out, err
		}
	}
	p, err := b.startChild(ctx, m)
	if err != nil {
		return out, err
	}
	// Whatever happens, the child is not left running.
	defer p.stop()
	if err := b.measureReady(ctx, p, &out); err != nil {
		return out, err
	}
	if b.churn.mix.total() > 0 {
		if err := b.measureChurn(ctx, p, seq, &out); err != nil {
			return out, err
		}
	}
	if err := p.stdin.Close(); err != nil {
		return out, err
	}
	return out, p.cmd.Wait()
}

// childProcess is a running child: the parent writes "measure N" to its
// stdin and reads its JSON lines.
type childProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func (p *childProcess) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}

// startChild starts mode m's child: "versus child <mode> ...", from this
// build or from m's +exe=.
func (b *bench) startChild(ctx context.Context, m mode) (*childProcess, error) {
	args := b.childArgs(m, b.env.NATSURL())
	profiles, err := b.profileArgs(m)
	if err != nil {
		return nil, err
	}
	exe := b.self
	if m.exe != "" {
		exe = m.exe
	}
	cmd := exec.CommandContext(ctx, exe, append(args, profiles...)...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), b.childEnv(m)...)
	stdin, stdout, err := benchkit.StartPiped(cmd)
	if err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	return &childProcess{cmd: cmd, stdin: stdin, lines: lines}, nil
}

// childArgs are the child's arguments (child's flags), the child protocol
// an older build given as +exe= speaks too: add none it does not know.
func (b *bench) childArgs(m mode, natsURL string) []string {
	args := []string{"child", m.kind.name, "-kubeconfig", b.kubeconfig, "-nats", natsURL, "-settle", b.settle.String(), "-stream", streamName(m),
		"-namespaces", strconv.Itoa(b.layout.namespaces), "-shard", m.shard.String(), "-scrape-interval", b.scrapeEvery.String()}
	if m.budget != "" {
		args = append(args, "-budget", m.budget)
	}
	if b.layout.named {
		args = append(args, "-named-namespaces")
	}
	if m.noGzip {
		args = append(args, "-no-gzip")
	}
	if b.churn.mix.total() > 0 {
		args = append(args, "-wait")
	}
	if b.pods > 0 {
		args = append(args, "-pods")
	}
	return args
}

// profileArgs are the child's profile arguments, in directories made
// here.
func (b *bench) profileArgs(m mode) ([]string, error) {
	var args []string
	if b.profiles != "" {
		if err := os.MkdirAll(b.profiles, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "-heapprofile", filepath.Join(b.profiles, m.id()+".pprof"))
	}
	if b.cpuProfiles != "" {
		if err := os.MkdirAll(b.cpuProfiles, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "-ready-cpuprofile", filepath.Join(b.cpuProfiles, m.id()+"-ready-cpu.pprof"))
		if b.churn.mix.total() > 0 {
			args = append(args, "-churn-cpuprofile", filepath.Join(b.cpuProfiles, m.id()+"-churn-cpu.pprof"))
		}
	}
	return args, nil
}

// childEnv is what the child's environment adds to the parent's: the
// runtime's settings, and a bridge's settings that have no flag.
func (b *bench) childEnv(m mode) []string {
	var env []string
	set := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	set("GOMEMLIMIT", b.memLimit)
	set("GOGC", m.gogc)
	set("GOMAXPROCS", m.procs)
	set("BRIDGE_PUBLISH_LINGER", m.linger)
	if m.isBridge() && m.gzip {
		set("BRIDGE_KUBE_COMPRESSION", "true")
	}
	if m.isBridge() && m.noGzip {
		set("BRIDGE_KUBE_COMPRESSION", "false")
	}
	set("BRIDGE_CONFIG", m.config)
	if m.cbor {
		set("KUBE_FEATURE_ClientsAllowCBOR", "true")
		set("KUBE_FEATURE_ClientsPreferCBOR", "true")
	}
	if m.isBridge() && b.churn.mix.cluster > 0 {
		// Every event of the churn stays in the stream, to be counted.
		set("BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT", "-1")
	}
	return env
}

// measureReady reads the child's first measurement, once it is ready, and
// checks what it cached, and for a bridge, what it stored.
func (b *bench) measureReady(ctx context.Context, p *childProcess, out *run) error {
	m := out.m
	var err error
	if out.ready, err = readResult(p.lines); err != nil {
		return err
	}
	if want := b.objectsOf(m); out.ready.Objects >= 0 && out.ready.Objects != want {
		return fmt.Errorf("child cached %d objects, want %d", out.ready.Objects, want)
	}
	if m.isBridge() {
		sc, err := countStream(ctx, b.env.NATSURL(), streamName(m))
		if err != nil {
			return err
		}
		// term marker, and per type a begin marker, one item per object
		// and an end marker
		objects, types := b.objectsOf(m)+b.pods, 1+min(b.pods, 1)
		if want := objects + 1 + 2*types; sc.Msgs != uint64(want) || sc.Items != objects {
			return fmt.Errorf("stream %s holds %d messages (%d snapshot items), want %d (%d)", streamName(m), sc.Msgs, sc.Items, want, objects)
		}
		out.stream = &sc
	}
	logResult(m, out.ready)
	return nil
}

// measureChurn makes the churn, waits for a bridge's stream to hold it,
// and reads the child's second measurement once it has seen it all.
func (b *bench) measureChurn(ctx context.Context, p *childProcess, seq int, out *run) error {
	m := out.m
	// The API server's CPU over the same span: the churn's writes cost it
	// the same in every mode, the watch it serves this child does not
	// (gzip or not).
	apiPID := b.env.APIServerPID()
	apiStart, apiErr := benchkit.ProcessCPUSeconds(apiPID)
	load, err := b.runChurn(ctx, m.kind.objectKind(), seq)
	out.load = &load
	if err != nil {
		return err
	}
	if m.isBridge() {
		sc, err := b.streamAfterChurn(ctx, m, seq, load)
		if err != nil {
			return err
		}
		out.readyStream, out.stream = out.stream, &sc
	}
	if b.churn.mix.cluster > 0 {
		cp := b.clusterPlan(seq)
		out.cluster = &cp
	}
	if _, err := fmt.Fprintf(p.stdin, "measure %d\n", b.eventsOf(m)); err != nil {
		return err
	}
	r, err := readResult(p.lines)
	if err != nil {
		return err
	}
	if want := b.eventsOf(m); r.Objects >= 0 && r.Events < int64(want) {
		return fmt.Errorf("informer delivered %d events, want %d (of %s)", r.Events, want, b.churn.mix)
	}
	out.churn = &r
	if apiEnd, err := benchkit.ProcessCPUSeconds(apiPID); err == nil && apiErr == nil {
		out.apiserverCPU = apiEnd - apiStart
	}
	logResult(m, r)
	return nil
}

// streamAfterChurn waits for bridge mode m's stream to hold the churn's
// events of its objects, and checks that it holds no others.
func (b *bench) streamAfterChurn(ctx context.Context, m mode, seq int, load churnStats) (streamCount, error) {
	if b.churn.mix.cluster > 0 {
		sc, err := waitForCluster(ctx, b.env.NATSURL(), streamName(m), load.Markers)
		if err != nil {
			return sc, err
		}
		return sc, b.checkCluster(ctx, m, sc, b.clusterPlan(seq))
	}
	mix := b.mixOf(m)
	sc, err := waitForChurn(ctx, b.env.NATSURL(), streamName(m), mix)
	if err != nil {
		return sc, err
	}
	if sc.Items != b.objectsOf(m) || sc.Added+sc.RolledUp != mix.creates || sc.Changes != mix.updates || sc.Deleted != mix.deletes || sc.Other != 0 {
		return sc, fmt.Errorf("stream %s: %d snapshot items, %d added (%d more rolled up), %d updated events standing for %d updates, %d deleted, %d other events; want %d items, %s, no other events",
			streamName(m), sc.Items, sc.Added, sc.RolledUp, sc.Updated, sc.Changes, sc.Deleted, sc.Other, b.objectsOf(m), mix)
	}
	return sc, nil
}

func readResult(lines *bufio.Scanner) (result, error) {
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return result{}, fmt.Errorf("child output %q: %w", line, err)
		}
		return r, nil
	}
	if err := lines.Err(); err != nil {
		return result{}, err
	}
	return result{}, errors.New("child exited without a result")
}

func logResult(m mode, r result) {
	fmt.Fprintf(os.Stderr, "==== %s (%s): RSS %.1f MiB, peak %.1f MiB, heap in-use %.1f MiB, max live heap %.1f MiB, max sampled heap alloc %.1f MiB, max pending %d, max publish buffer %.1f MiB\n",
		m.id(), r.Phase, kib(r.VmRSSKiB), kib(r.VmHWMKiB), mib(r.HeapInuse), mib(r.MaxLiveHeap), mib(r.MaxHeapAlloc), r.MaxPending, mib(uint64(r.MaxBufferBytes)))
}

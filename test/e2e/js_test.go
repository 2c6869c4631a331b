package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testenv"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// TestJSConsumer runs examples/js/consume.mjs (nats.js and the CloudEvents
// JS SDK) against the bridge on the real apiserver and NATS, as the
// consumer guide (docs/consumers.md) tells a reader to: its state,
// rebuilt from the last message per subject, equals the apiserver's list;
// live changes are printed as they happen, with the state's size after
// each; and messages a deposed leader stored after a newer term began are
// ignored, at the bootstrap and live. Without node and npm it skips, or
// fails under $KUBEBRIDGE_REQUIRE_E2E=1 (see jsTools).
func TestJSConsumer(t *testing.T) {
	node, npm := jsTools(t)
	env := testenv.Get(t)
	h := newHarness(t)
	typ := h.cmType()
	dir := jsInstall(t, npm)

	for i := range 5 {
		h.createCM(h.ns, fmt.Sprintf("cm-%d", i), nil, map[string]string{"k": "v"})
	}
	// The defaults the guide describes (per-subject limit, tombstones with
	// a TTL and roll-up) rather than the harness's full history; no
	// periodic snapshot, so nothing sweeps a late message away.
	vars := map[string]string{"BRIDGE_RESOURCES": "configmaps", "BRIDGE_RESYNC_PERIOD": "0",
		"BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT": "", "BRIDGE_TOMBSTONE_TTL": ""}
	// Two terms: the first bridge plays the deposed leader whose late
	// messages the consumer must ignore.
	b1 := h.startBridge(vars)
	b1.stop()
	h.startBridge(vars)
	terms := h.jsTerms()
	if len(terms) != 2 {
		t.Fatalf("term markers at %v, want one per bridge start (2)", terms)
	}
	h.deleteCM(h.ns, "cm-0")
	cm := h.createCM(h.ns, "cm-5", nil, map[string]string{"k": "v"})
	cm.Data["k"] = "v2"
	cm = h.updateCM(cm)
	h.waitLastPerSubject(typ, h.listConfigMaps(h.ns, metav1.ListOptions{}))
	// Stored after the second term began, written in the first: without
	// the term rule it would be an object the apiserver does not have.
	h.jsPublishLate("late-boot", terms[0])

	js := jsStart(t, node, dir, typ, env.NATSURL(), h.stream)
	synced := js.waitLine(t, "the state and the synced line", regexp.MustCompile(`^synced \d+ objects$`))
	got := js.state(h, synced)
	want := h.listConfigMaps(h.ns, metav1.ListOptions{})
	if d := diffState(got, want); d != "" {
		t.Fatalf("the JS consumer's state differs from the apiserver's list: %s\n%s", d, js.output())
	}
	// The harness's bridges watch its namespace only: the begin markers
	// say so, and the example says what it compares within.
	if !slices.Contains(js.lines()[:synced], "scope namespaces="+h.ns) {
		t.Errorf("the JS consumer did not print the scope the bridge watches (namespaces=%s)\n%s", h.ns, js.output())
	}
	if !slices.ContainsFunc(js.lines()[:synced], lateLineRE(h.ns+"/late-boot", "fenced").MatchString) {
		t.Errorf("the JS consumer did not say it fenced the late message before it synced\n%s", js.output())
	}
	t.Logf("JS consumer synced %d objects, as the apiserver lists", len(got))

	// Live: each change is printed with the consumer's object count after it.
	cm.Data["k"] = "v3"
	cm = h.updateCM(cm)
	js.waitEvent(t, "updated", h.ns+"/cm-5", cm.ResourceVersion, len(want))
	h.deleteCM(h.ns, "cm-1")
	js.waitEvent(t, "deleted", h.ns+"/cm-1", "", len(want)-1)
	added := h.createCM(h.ns, "cm-6", nil, nil)
	js.waitEvent(t, "added", h.ns+"/cm-6", added.ResourceVersion, len(want))

	h.jsPublishLate("late-live", terms[0])
	i := js.waitLine(t, "a line about the late message", lateLineRE(h.ns+"/late-live", `\w+`))
	if l := js.lines()[i]; !lateLineRE(h.ns+"/late-live", "fenced").MatchString(l) {
		t.Errorf("the JS consumer applied a message of a deposed term: %q", l)
	}
	if rest := js.lines()[i+1:]; len(rest) > 0 {
		t.Errorf("unexpected lines after the late message: %q", rest)
	}
	t.Logf("JS consumer output:\n%s", js.output())
}

// lateLineRE matches what the consumer prints for the added event of
// subject (<ns>/<name>): "fenced object.added <subject> term=…" when it
// ignores it, "added <subject> rv=…" when it applies it. prefix is a
// regular expression for the first word.
func lateLineRE(subject, prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + prefix + ` (object\.added )?` + regexp.QuoteMeta(subject) + ` `)
}

// jsTools finds node and npm. Without them the test skips, saying how
// to install them; with $KUBEBRIDGE_REQUIRE_E2E=1 (make test, CI) it
// fails instead: the run must not pass without the JavaScript consumer.
func jsTools(t *testing.T) (node, npm string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		npm, err = exec.LookPath("npm")
	}
	if err != nil {
		why := fmt.Sprintf("examples/js needs node and npm on PATH (%v); install them, on Debian or Ubuntu with `apt-get install nodejs npm`", err)
		if testenv.Required() {
			t.Fatalf("%s ($%s=1: the JavaScript consumer test may not skip)", why, testenv.EnvRequireE2E)
		}
		t.Skipf("%s: skipping the JavaScript consumer test", why)
	}
	return node, npm
}

// jsInstall copies examples/js into a temporary directory and installs it
// from its lock file with npm ci. Packages are cached in
// $KUBEBRIDGE_BIN_CACHE/npm (default ~/.cache/kubebridge/npm), as the
// control-plane binaries are, so only a first run downloads them.
func jsInstall(t *testing.T, npm string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "examples", "js")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "consume.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := os.Getenv("KUBEBRIDGE_BIN_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "kubebridge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund",
		"--cache", filepath.Join(cache, "npm"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of examples/js: %v\n%s", err, out)
	}
	t.Logf("npm ci: %v", time.Since(start).Round(time.Millisecond))
	return dir
}

// jsTerms returns the sequences of the stream's term markers, in order.
func (h *harness) jsTerms() []uint64 {
	h.t.Helper()
	return h.jsTermsOn(h.prefix + "." + cluster + "." + contract.TermToken)
}

// jsTermsOn is jsTerms of the term markers on subject.
func (h *harness) jsTermsOn(subject string) []uint64 {
	h.t.Helper()
	var out []uint64
	for _, m := range h.readFrom(subject, 0) {
		out = append(out, m.Seq)
	}
	return out
}

// jsPublishLate stores what a deposed leader of term could still store: an
// added event of a ConfigMap name that does not exist, written in term and
// stored after a newer term began. Its headers are spelled out from the
// README.
func (h *harness) jsPublishLate(name string, term uint64) {
	h.t.Helper()
	h.jsPublishLateIn(h.ns, name, term, "")
}

// jsPublishLateIn is jsPublishLate in namespace ns, from shard ("" when
// unsharded).
func (h *harness) jsPublishLateIn(ns, name string, term uint64, shard string) {
	h.t.Helper()
	uid := string(newUID(h.t))
	id := cmID(uid, "1", "added") + "/" + strconv.FormatUint(term, 10)
	hdr := nats.Header{}
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": id, "ce-type": contract.TypeAdded, "ce-time": time.Now().UTC().Format(time.RFC3339Nano),
		"ce-source": "k8s://" + cluster + "/api/v1/namespaces/" + ns + "/configmaps", "ce-subject": ns + "/" + name,
		"ce-datacontenttype": "application/json", "Content-Type": "application/json",
		"ce-cluster": cluster, "ce-kind": "ConfigMap", "ce-apiversion": "v1", "ce-namespace": ns, "ce-name": name,
		"ce-uid": uid, "ce-resourceversion": "1", "ce-term": strconv.FormatUint(term, 10), "Nats-Msg-Id": msgID(id),
	} {
		hdr.Set(k, v)
	}
	if shard != "" {
		hdr.Set("ce-shard", shard)
	}
	data := fmt.Sprintf(`{"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":"1"}}}`, name, ns, uid)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ack, err := h.js.PublishMsg(ctx, &nats.Msg{Subject: h.cmSubject(ns, name), Header: hdr, Data: []byte(data)})
	if err != nil {
		h.t.Fatalf("publish a late message of term %d: %v", term, err)
	}
	h.t.Logf("late message of term %d stored at seq %d on %s", term, ack.Sequence, h.cmSubject(ns, name))
}

// state is the state the consumer printed before its line synced: subject
// → resourceVersion.
func (p *jsProc) state(h *harness, synced int) map[string]string {
	got := map[string]string{}
	for _, l := range p.lines()[:synced] {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "state" {
			ns, name, _ := strings.Cut(f[1], "/")
			got[h.cmSubject(ns, name)] = strings.TrimPrefix(f[2], "rv=")
		}
	}
	return got
}

// jsProc is one run of the JavaScript consumer; its stdout is collected
// line by line.
type jsProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    []string
	stderr strings.Builder
	done   chan struct{}
}

// jsStart runs consume.mjs for type typ; it is stopped with SIGTERM at the
// end of the test.
func jsStart(t *testing.T, node, dir, typ, natsURL, stream string) *jsProc {
	t.Helper()
	p := &jsProc{done: make(chan struct{})}
	p.cmd = exec.Command(node, "consume.mjs", typ)
	p.cmd.Dir = dir
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "NATS_URL=" + natsURL, "KUBEBRIDGE_STREAM=" + stream}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *jsProc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.out...)
}

func (p *jsProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "---- stdout:\n" + strings.Join(p.out, "\n") + "\n---- stderr:\n" + p.stderr.String()
}

// waitLine waits for a line matching re and returns its index. It fails
// the test if the consumer exits first or nothing matches in time.
func (p *jsProc) waitLine(t *testing.T, what string, re *regexp.Regexp) int {
	t.Helper()
	var i int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		if i = slices.IndexFunc(p.lines(), re.MatchString); i >= 0 {
			return true, nil
		}
		select {
		case <-p.done:
			return false, fmt.Errorf("the JS consumer exited (%v) before printing %s", p.cmd.ProcessState, what)
		default:
			return false, nil
		}
	})
	if wait.Interrupted(err) {
		t.Fatalf("the JS consumer did not print %s within %v\n%s", what, convergeTimeout, p.output())
	} else if err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
	return i
}

// waitEvent waits for the line of a live event of subject (<ns>/<name>) at
// rv (any when "") and requires the consumer to hold objects after it.
func (p *jsProc) waitEvent(t *testing.T, verb, subject, rv string, objects int) {
	t.Helper()
	rvRE := `\S+`
	if rv != "" {
		rvRE = regexp.QuoteMeta(rv)
	}
	re := regexp.MustCompile(`^` + verb + ` ` + regexp.QuoteMeta(subject) + ` rv=` + rvRE + ` seq=\d+ \((\d+) objects\)`)
	i := p.waitLine(t, fmt.Sprintf("%s %s rv=%s", verb, subject, rv), re)
	if got := re.FindStringSubmatch(p.lines()[i])[1]; got != strconv.Itoa(objects) {
		t.Errorf("after %s %s the JS consumer holds %s objects, the apiserver %d: %q", verb, subject, got, objects, p.lines()[i])
	}
}

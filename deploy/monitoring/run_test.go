package monitoring

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/util/teststorage"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/testenv"
)

// The labels a Prometheus scraping through the ServiceMonitor adds to
// every series of the bridge.
const (
	targetNamespace = "kubebridge"
	targetJob       = "kubebridge-metrics"
)

// run is one real run of the bridge whose /metrics is scraped every
// second into a Prometheus storage, as a Prometheus would.
type run struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	logPath string
	addr    string
	store   *teststorage.TestStorage
	start   time.Time
	end     time.Time

	mu   sync.Mutex
	last map[string]*familySeries // the last scrape: family name → its label names
	stop chan struct{}
	done chan struct{}
}

// familySeries is what one scrape showed of a metric family.
type familySeries struct {
	labels map[string]bool
}

var listenRE = regexp.MustCompile(`"Serving /healthz, /readyz and /metrics".* address="([^"]+)"`)

// startRun starts the bridge with vars over the test's environment and
// scrapes it every second until stopRun.
func startRun(t *testing.T, env *testenv.Env, name string, vars map[string]string) *run {
	t.Helper()
	r := &run{t: t, name: name, logPath: filepath.Join(t.TempDir(), name+".log"), store: teststorage.New(t), stop: make(chan struct{}), done: make(chan struct{})}
	log, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	envv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "KUBECONFIG=" + env.KubeconfigPath(), "NATS_URL=" + env.NATSURL(),
		"BRIDGE_HTTP_ADDR=127.0.0.1:0", "BRIDGE_CLUSTER_NAME=monitoring", "BRIDGE_SUBJECT_PREFIX=mon-" + name, "BRIDGE_STREAM_NAME=MON_" + strings.ToUpper(name)}
	for k, v := range vars {
		envv = append(envv, k+"="+v)
	}
	r.cmd = exec.Command(bridgeBin)
	r.cmd.Env, r.cmd.Stdout, r.cmd.Stderr = envv, log, log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(r.logPath)
			t.Logf("==== bridge %s log:\n%s", name, b)
		}
	})
	var out []byte
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		out, _ = os.ReadFile(r.logPath)
		if m := listenRE.FindSubmatch(out); m != nil {
			r.addr = string(m[1])
		}
		return r.addr != "", nil
	})
	if err != nil {
		t.Fatalf("bridge %s does not serve /metrics after a minute:\n%s", name, out)
	}
	r.start = time.Now()
	go r.scrapeLoop()
	return r
}

func (r *run) scrapeLoop() {
	defer close(r.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := r.scrape(); err != nil {
			r.t.Logf("%s: scrape: %v", r.name, err)
		}
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// scrape reads /metrics once and appends every sample at the time of the
// scrape, with the labels the scrape adds.
func (r *run) scrape() error {
	now := time.Now()
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return err
	}
	target := map[string]string{"namespace": targetNamespace, "job": targetJob, "pod": "kubebridge-" + r.name, "instance": r.addr,
		"service": targetJob, "endpoint": "http-metrics", "container": "bridge"}
	app := r.store.Appender(context.Background())
	seen := map[string]*familySeries{}
	add := func(name string, ls map[string]string, v float64) error {
		b := labels.NewBuilder(labels.EmptyLabels())
		b.Set(model.MetricNameLabel, name)
		for k, v := range target {
			b.Set(k, v)
		}
		fs := seen[name]
		if fs == nil {
			fs = &familySeries{labels: map[string]bool{}}
			seen[name] = fs
		}
		for k, v := range ls {
			b.Set(k, v)
			fs.labels[k] = true
		}
		_, err := app.Append(0, b.Labels(), now.UnixMilli(), v)
		return err
	}
	for name, f := range fams {
		for _, m := range f.Metric {
			ls := map[string]string{}
			for _, l := range m.Label {
				ls[l.GetName()] = l.GetValue()
			}
			var err error
			switch {
			case m.Counter != nil:
				err = add(name, ls, m.Counter.GetValue())
			case m.Gauge != nil:
				err = add(name, ls, m.Gauge.GetValue())
			case m.Untyped != nil:
				err = add(name, ls, m.Untyped.GetValue())
			case m.Histogram != nil:
				for _, bk := range m.Histogram.Bucket {
					bl := copyWith(ls, "le", fmt.Sprint(bk.GetUpperBound()))
					if err = add(name+"_bucket", bl, float64(bk.GetCumulativeCount())); err != nil {
						break
					}
				}
				if err == nil {
					err = add(name+"_bucket", copyWith(ls, "le", "+Inf"), float64(m.Histogram.GetSampleCount()))
				}
				if err == nil {
					err = add(name+"_sum", ls, m.Histogram.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", ls, float64(m.Histogram.GetSampleCount()))
				}
			case m.Summary != nil:
				err = add(name+"_sum", ls, m.Summary.GetSampleSum())
				if err == nil {
					err = add(name+"_count", ls, float64(m.Summary.GetSampleCount()))
				}
			}
			if err != nil {
				_ = app.Rollback()
				return err
			}
		}
	}
	if err := app.Commit(); err != nil {
		return err
	}
	r.mu.Lock()
	r.last = seen
	r.mu.Unlock()
	return nil
}

func copyWith(ls map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range ls {
		out[a] = b
	}
	return out
}

// stopRun ends the scrapes and the bridge (SIGTERM).
func (r *run) stopRun() {
	close(r.stop)
	<-r.done
	r.end = time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
}

// families is the last scrape's metric names with their label names.
func (r *run) families() map[string]*familySeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

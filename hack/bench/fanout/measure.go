package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/hack/bench/internal/benchkit"
)

// usage is what one process used over a setup's window: CPU seconds (user
// and system), and its resident set sampled every sampleEvery, the mean
// and the peak of the samples, in MiB.
type usage struct {
	CPU, RSSMean, RSSPeak float64
}

// sampleEvery is how often the meter reads every resident set.
const sampleEvery = 500 * time.Millisecond

// watched is a process a meter measures.
type watched struct {
	name string
	pid  int
}

// meter measures processes from its start to its end: CPU from
// /proc/<pid>/stat at both ends, the resident set from /proc/<pid>/status
// in between.
type meter struct {
	procs    []watched
	cpuStart []float64
	began    time.Time

	mu      sync.Mutex
	rssSum  []float64
	rssPeak []float64
	samples int

	stop, done chan struct{}
}

func startMeter(procs []watched) (*meter, error) {
	m := &meter{procs: procs, cpuStart: make([]float64, len(procs)), rssSum: make([]float64, len(procs)), rssPeak: make([]float64, len(procs)),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i, p := range procs {
		cpu, err := benchkit.ProcessCPUSeconds(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		m.cpuStart[i] = cpu
	}
	m.began = time.Now()
	if err := m.sample(); err != nil {
		return nil, err
	}
	go m.run()
	return m, nil
}

func (m *meter) run() {
	defer close(m.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			// A process that ended fails the setup at its end, where
			// the CPU is read again.
			_ = m.sample()
		}
	}
}

// sample reads every resident set once.
func (m *meter) sample() error {
	rss := make([]float64, len(m.procs))
	for i, p := range m.procs {
		n, err := benchkit.ProcNumbers("/proc/" + strconv.Itoa(p.pid) + "/status")
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		rss[i] = float64(n["VmRSS"]) / 1024
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, v := range rss {
		m.rssSum[i] += v
		m.rssPeak[i] = max(m.rssPeak[i], v)
	}
	m.samples++
	return nil
}

// end stops the meter and returns each process's usage, by name, and the
// window's length.
func (m *meter) end() (map[string]usage, time.Duration, error) {
	window := time.Since(m.began)
	close(m.stop)
	<-m.done
	if err := m.sample(); err != nil {
		return nil, window, err
	}
	out := make(map[string]usage, len(m.procs))
	for i, p := range m.procs {
		cpu, err := benchkit.ProcessCPUSeconds(p.pid)
		if err != nil {
			return nil, window, fmt.Errorf("%s: %w", p.name, err)
		}
		out[p.name] = usage{CPU: cpu - m.cpuStart[i], RSSMean: m.rssSum[i] / float64(m.samples), RSSPeak: m.rssPeak[i]}
	}
	return out, window, nil
}

// quiesce waits until procs together use less than cores of CPU over a
// second, so that what a setup's start made them do (an informer's list
// served, a bootstrap, the garbage collections after them) is done before
// its window opens. After timeout it says so and returns: the window then
// opens on a busy server.
func quiesce(ctx context.Context, procs []watched, cores float64, timeout time.Duration) error {
	total := func() (float64, error) {
		var sum float64
		for _, p := range procs {
			cpu, err := benchkit.ProcessCPUSeconds(p.pid)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", p.name, err)
			}
			sum += cpu
		}
		return sum, nil
	}
	start := time.Now()
	last, err := total()
	if err != nil {
		return err
	}
	var rate float64
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, false, func(context.Context) (bool, error) {
		now, err := total()
		if err != nil {
			return false, err
		}
		rate, last = now-last, now
		return rate < cores, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		logf("not quiet after %v: the processes measured use %.2f cores; the window opens anyway", timeout, rate)
		return nil
	}
	if err == nil {
		logf("quiet after %v (%.2f cores)", time.Since(start).Round(time.Millisecond), rate)
	}
	return err
}

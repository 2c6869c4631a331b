package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/freeport"
)

// bridgeProc is the bridge binary running for one setup.
type bridgeProc struct {
	cmd *exec.Cmd
	log string
	// done is closed once the process has exited, with err its exit.
	done chan struct{}
	err  error
}

// startBridge starts the bridge binary on the benchmark's namespace and
// waits until it is ready (/readyz: its start-up snapshot is stored).
// Any BRIDGE_* variable of the environment reaches it, to try a setting.
func (b *bench) startBridge(ctx context.Context, seq int) (*bridgeProc, error) {
	ports, err := freeport.Pick(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BRIDGE_") {
			vars[k] = v
		}
	}
	for k, v := range map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "TMPDIR": os.TempDir(),
		"KUBECONFIG": b.env.KubeconfigPath(), "NATS_URL": b.nats.ClientURL,
		"BRIDGE_RESOURCES": "configmaps", "BRIDGE_NAMESPACES": benchNamespace, "BRIDGE_RESYNC_PERIOD": "0",
		"BRIDGE_CLUSTER_NAME": benchCluster, "BRIDGE_SUBJECT_PREFIX": benchPrefix, "BRIDGE_STREAM_NAME": benchStream,
		"BRIDGE_HTTP_ADDR": addr,
	} {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	p := &bridgeProc{log: filepath.Join(b.dir, fmt.Sprintf("bridge-%02d.log", seq)), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // the child writes the log through its own descriptor
	p.cmd = exec.Command(b.bridgeBin)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr, p.cmd.SysProcAttr = env, f, f, childAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	if err := p.awaitReady(ctx, "http://"+addr+"/readyz", b.o.syncTimeout); err != nil {
		_ = p.stop()
		return nil, err
	}
	return p, nil
}

func (p *bridgeProc) awaitReady(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("the bridge exited (%v); log %s", p.err, p.log)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("bridge not ready: %w; log %s", err, p.log)
	}
	return nil
}

func (p *bridgeProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *bridgeProc) pid() int { return p.cmd.Process.Pid }

// stop ends the bridge with SIGTERM, as Kubernetes does, and fails if it
// had exited before or does not exit 0.
func (p *bridgeProc) stop() error {
	if p.exited() {
		return fmt.Errorf("the bridge exited during the setup (%v); log %s", p.err, p.log)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("the bridge did not stop within a minute of SIGTERM; log " + p.log)
	}
	if p.err != nil {
		return fmt.Errorf("the bridge: %w; log %s", p.err, p.log)
	}
	return nil
}

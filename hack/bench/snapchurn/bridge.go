package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

type bridgeProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startBridge(o options, kubeconfig, natsURL, logPath string) (*bridgeProc, error) {
	vars := map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
		"TMPDIR":                os.TempDir(),
		"KUBECONFIG":            kubeconfig,
		"NATS_URL":              natsURL,
		"BRIDGE_RESOURCES":      "configmaps",
		"BRIDGE_NAMESPACES":     namespace,
		"BRIDGE_RESYNC_PERIOD":  "0",
		"BRIDGE_CLUSTER_NAME":   cluster,
		"BRIDGE_SUBJECT_PREFIX": prefix,
		"BRIDGE_STREAM_NAME":    stream,
		"BRIDGE_HTTP_ADDR":      "127.0.0.1:0",
	}
	for _, kv := range o.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // the child keeps its own descriptor and writes the log
	cmd := exec.Command(o.bridge)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.bridge, err)
	}
	b := &bridgeProc{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.done) }()
	return b, nil
}

func (b *bridgeProc) stop() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *bridgeProc) waitLog(ctx context.Context, substr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		raw, _ := os.ReadFile(b.log)
		if strings.Contains(string(raw), substr) {
			return nil
		}
		select {
		case <-b.done:
			return fmt.Errorf("the bridge exited (%v) before logging %q; log %s", b.cmd.ProcessState, substr, b.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the bridge did not log %q within %v; log %s", substr, timeout, b.log)
		}
	}
}

var listenLine = regexp.MustCompile(`"Serving /healthz, /readyz and /metrics".* address="([^"]+)"`)

func (b *bridgeProc) endpoint(ctx context.Context) (string, error) {
	if err := b.waitLog(ctx, "Serving /healthz, /readyz and /metrics", time.Minute); err != nil {
		return "", err
	}
	raw, _ := os.ReadFile(b.log)
	m := listenLine.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("no listen address in %s", b.log)
	}
	return "http://" + string(m[1]), nil
}

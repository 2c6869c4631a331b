package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// BuildNATSServer builds the nats-server of this module's go.mod into dir
// and returns the binary's path. Tests that kill a server with SIGKILL,
// or run several as a cluster, run it as a child process.
func BuildNATSServer(ctx context.Context, dir string) (string, error) {
	return GoBuild(ctx, dir, "nats-server", "github.com/nats-io/nats-server/v2")
}

// NATSProcess is a nats-server child process run from a config file. It
// keeps its config, ports and JetStream store across Kill and Start, as a
// node of a StatefulSet keeps its volume.
type NATSProcess struct {
	// Name is the server_name of its config.
	Name string
	// ClientURL is nats://127.0.0.1:<port>.
	ClientURL string
	// MonitorURL is http://127.0.0.1:<port> (/healthz, /jsz, ...).
	MonitorURL string

	bin, conf, logPath string

	mu sync.Mutex
	p  *process
}

// StartNATSProcess writes config to dir/<name>.conf and starts nats-server
// with it. clientPort and monitorPort must be the ports the config
// listens on. It returns once /healthz?js-enabled-only=true answers 200
// (JetStream enabled, or not configured).
func StartNATSProcess(ctx context.Context, bin, dir, name, config string, clientPort, monitorPort int) (*NATSProcess, error) {
	n := &NATSProcess{
		Name:       name,
		ClientURL:  "nats://" + hostPort(clientPort),
		MonitorURL: "http://" + hostPort(monitorPort),
		bin:        bin,
		conf:       filepath.Join(dir, name+".conf"),
		logPath:    filepath.Join(dir, name+".log"),
	}
	if err := os.WriteFile(n.conf, []byte(config), 0o600); err != nil {
		return nil, err
	}
	return n, n.Start(ctx)
}

// Start starts the server again (after Kill); it is an error while it runs.
func (n *NATSProcess) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.p != nil && !n.p.exited() {
		n.mu.Unlock()
		return fmt.Errorf("testenv: nats-server %s is already running", n.Name)
	}
	p, err := startProcess("nats-server "+n.Name, n.bin, n.logPath, []string{"--config", n.conf})
	if err != nil {
		n.mu.Unlock()
		return err
	}
	n.p = p
	n.mu.Unlock()
	client := &http.Client{}
	defer client.CloseIdleConnections()
	return p.waitFor(ctx, "/healthz?js-enabled-only=true", func(ctx context.Context) error {
		return getStatus(ctx, client, n.MonitorURL+"/healthz?js-enabled-only=true")
	})
}

// Kill SIGKILLs the server and waits until it is gone.
func (n *NATSProcess) Kill() {
	n.mu.Lock()
	p := n.p
	n.mu.Unlock()
	p.kill()
}

// Running reports whether the server process is alive.
func (n *NATSProcess) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.p != nil && !n.p.exited()
}

// Healthy reports the server's /healthz: 200 once JetStream (and, in a
// cluster, its meta group and streams) is current.
func (n *NATSProcess) Healthy(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	return getStatus(ctx, client, n.MonitorURL+"/healthz")
}

// Log is the path of the server's log file.
func (n *NATSProcess) Log() string { return n.logPath }

func getStatus(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// NATSCluster is n nats-server processes clustered over routes, each with
// JetStream and a store of its own.
type NATSCluster struct {
	Nodes []*NATSProcess
}

// StartNATSCluster starts n nodes named n0, n1, ... under dir and waits
// until every node's /healthz is 200 (a meta leader elected). extra is
// added to every node's config.
func StartNATSCluster(ctx context.Context, bin, dir string, n int, extra string) (*NATSCluster, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://%s", hostPort(ports[3*i+1])))
	}
	c := &NATSCluster{}
	errc := make(chan error, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		store := filepath.Join(dir, name+"-store")
		conf := fmt.Sprintf(`server_name: %q
listen: %q
http: %q
jetstream { store_dir: %q }
cluster {
  name: testenv
  listen: %q
  routes: [%s]
}
%s
`, name, hostPort(ports[3*i]), hostPort(ports[3*i+2]), store, hostPort(ports[3*i+1]), strings.Join(routes, ", "), extra)
		node := &NATSProcess{Name: name, ClientURL: "nats://" + hostPort(ports[3*i]), MonitorURL: "http://" + hostPort(ports[3*i+2]),
			bin: bin, conf: filepath.Join(dir, name+".conf"), logPath: filepath.Join(dir, name+".log")}
		if err := os.WriteFile(node.conf, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
		// Started together: JetStream in a cluster waits for its peers.
		go func() { errc <- node.Start(ctx) }()
	}
	for range n {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	if err == nil {
		err = c.WaitHealthy(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// URL is every node's client URL, comma-separated, as NATS_URL takes them.
func (c *NATSCluster) URL() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.ClientURL)
	}
	return strings.Join(urls, ",")
}

// Node returns the node with server_name name, or nil.
func (c *NATSCluster) Node(name string) *NATSProcess {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// WaitHealthy waits until every running node's /healthz is 200.
func (c *NATSCluster) WaitHealthy(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, n := range c.Nodes {
			if n.Running() {
				if err := n.Healthy(ctx); err != nil {
					last = fmt.Errorf("%s: %w", n.Name, err)
				}
			}
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("testenv: NATS cluster not healthy: %w", last)
	}
	return nil
}

// Close kills every node.
func (c *NATSCluster) Close() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// NATSCluster is n nats-server processes clustered over routes, each with
// JetStream and a store of its own.
type NATSCluster struct {
	Nodes []*NATSProcess

	routes *routeMesh // nil unless the routes are partitionable
}

// NATSClusterOptions say what cluster StartNATSClusterWith starts.
type NATSClusterOptions struct {
	// Nodes is how many nodes, named n0, n1, ...
	Nodes int
	// Extra is added to every node's config.
	Extra string
	// PartitionableRoutes sends every route between two nodes through
	// proxies the cluster owns, so that Partition can cut a node off from
	// its peers while it keeps its clients.
	PartitionableRoutes bool
	// RouteTLS, if set, runs every route over mutual TLS: each node
	// presents Cert, as the server and as the client end of a route, and
	// accepts only peers whose certificates CA signed. Cert must name
	// 127.0.0.1 and allow both uses.
	RouteTLS *TLSFiles
	// ClientTLS, if set, serves TLS on every client port with Cert (CA is
	// not needed: clients are not asked for certificates); ClientURL is
	// then tls://.
	ClientTLS *TLSFiles
}

// TLSFiles are the files of a nats-server tls block.
type TLSFiles struct {
	CA, Cert, Key string
}

// StartNATSCluster starts n nodes named n0, n1, ... under dir and waits
// until every node's /healthz is 200 (a meta leader elected). extra is
// added to every node's config.
func StartNATSCluster(ctx context.Context, bin, dir string, n int, extra string) (*NATSCluster, error) {
	return StartNATSClusterWith(ctx, bin, dir, NATSClusterOptions{Nodes: n, Extra: extra})
}

// StartNATSClusterWith starts the cluster opts describes under dir and
// waits until every node's /healthz is 200 (a meta leader elected).
func StartNATSClusterWith(ctx context.Context, bin, dir string, opts NATSClusterOptions) (*NATSCluster, error) {
	n := opts.Nodes
	if n < 1 {
		return nil, fmt.Errorf("testenv: a NATS cluster of %d nodes", n)
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	clusterAddrs := make([]string, n)
	for i := range n {
		clusterAddrs[i] = hostPort(ports[3*i+1])
	}
	c := &NATSCluster{}
	if opts.PartitionableRoutes {
		if c.routes, err = newRouteMesh(clusterAddrs); err != nil {
			return nil, err
		}
	}
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		scheme := "nats://"
		if opts.ClientTLS != nil {
			scheme = "tls://"
		}
		node := &NATSProcess{Name: name, ClientURL: scheme + hostPort(ports[3*i]), MonitorURL: "http://" + hostPort(ports[3*i+2]),
			bin: bin, conf: filepath.Join(dir, name+".conf"), logPath: filepath.Join(dir, name+".log")}
		conf := c.nodeConfig(i, name, hostPort(ports[3*i]), hostPort(ports[3*i+2]), filepath.Join(dir, name+"-store"), clusterAddrs, opts)
		if err := os.WriteFile(node.conf, []byte(conf), 0o600); err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	errc := make(chan error, n)
	for _, node := range c.Nodes {
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

// nodeConfig is node i's config: its routes go to every node's cluster
// address, or through the proxies of its links to the other nodes.
func (c *NATSCluster) nodeConfig(i int, name, client, monitor, store string, clusterAddrs []string, opts NATSClusterOptions) string {
	var routes []string
	advertise := ""
	if c.routes != nil {
		routes = c.routes.routesOf(i)
		advertise = fmt.Sprintf("  advertise: %q\n", c.routes.advertised(i))
	} else {
		for _, a := range clusterAddrs {
			routes = append(routes, "nats-route://"+a)
		}
	}
	clientTLS, routeTLS := "", ""
	if t := opts.ClientTLS; t != nil {
		clientTLS = fmt.Sprintf("tls { cert_file: %q, key_file: %q }\n", t.Cert, t.Key)
	}
	if t := opts.RouteTLS; t != nil {
		routeTLS = fmt.Sprintf("  tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }\n", t.Cert, t.Key, t.CA)
	}
	return fmt.Sprintf(`server_name: %q
listen: %q
%shttp: %q
jetstream { store_dir: %q }
cluster {
  name: testenv
  listen: %q
%s%s  routes: [%s]
}
%s
`, name, client, clientTLS, monitor, store, clusterAddrs[i], advertise, routeTLS, strings.Join(routes, ", "), opts.Extra)
}

// Partition cuts the node named name off from its peers: every route
// link to and from it is closed, and so is every new one, until Heal.
// The node keeps its clients. The cluster must have been started with
// PartitionableRoutes.
func (c *NATSCluster) Partition(name string) error {
	i, err := c.routedNode(name)
	if err != nil {
		return err
	}
	c.routes.partition(i)
	return nil
}

// Heal lets the node named name reach its peers again after Partition,
// except those partitioned themselves. The nodes reconnect their routes
// on their own (within a second or so).
func (c *NATSCluster) Heal(name string) error {
	i, err := c.routedNode(name)
	if err != nil {
		return err
	}
	c.routes.heal(i)
	return nil
}

func (c *NATSCluster) routedNode(name string) (int, error) {
	if c.routes == nil {
		return 0, errors.New("testenv: the NATS cluster's routes are not partitionable (NATSClusterOptions.PartitionableRoutes)")
	}
	for i, n := range c.Nodes {
		if n.Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("testenv: no NATS node %q", name)
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

// Close kills every node, and closes the proxies of the routes.
func (c *NATSCluster) Close() {
	for _, n := range c.Nodes {
		n.Kill()
	}
	if c.routes != nil {
		c.routes.close()
	}
}

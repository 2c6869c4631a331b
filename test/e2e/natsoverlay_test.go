package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// natsServerOptions parses the nats.conf that server i of the StatefulSet
// sts runs, with nats-server's own parser: the file of the ConfigMap
// mounted at the path of --config (configMaps: name → data), with the
// container's environment: POD_NAME, and the values of the Secrets its
// env names (secrets: name → key → value).
func natsServerOptions(t *testing.T, sts *appsv1.StatefulSet, configMaps map[string]map[string]string, i int, secrets map[string]map[string]string) *server.Options {
	t.Helper()
	c := sts.Spec.Template.Spec.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	at := slices.Index(args, "--config")
	if at < 0 || at+1 >= len(args) {
		t.Fatalf("nats-server runs %q: want --config <file>", args)
	}
	path := args[at+1]
	var data string
	for _, m := range c.VolumeMounts {
		if rel, ok := strings.CutPrefix(path, m.MountPath+"/"); ok {
			v := sts.Spec.Template.Spec.Volumes[slices.IndexFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })]
			if v.ConfigMap != nil {
				data = configMaps[v.ConfigMap.Name][rel]
			}
		}
	}
	if data == "" {
		t.Fatalf("no ConfigMap holds %s", path)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch src := e.ValueFrom; {
		case src == nil:
			env[e.Name] = e.Value
		case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = fmt.Sprintf("%s-%d", sts.Name, i)
		case src.SecretKeyRef != nil:
			v, ok := secrets[src.SecretKeyRef.Name][src.SecretKeyRef.Key]
			if !ok && (src.SecretKeyRef.Optional == nil || !*src.SecretKeyRef.Optional) {
				t.Fatalf("nats-server's %s: Secret %s has no key %s", e.Name, src.SecretKeyRef.Name, src.SecretKeyRef.Key)
			}
			env[e.Name] = v
		case src.ResourceFieldRef != nil:
			// GOMEMLIMIT and the like: nothing for a server in this process.
		default:
			t.Fatalf("nats-server's %s: a valueFrom this test does not know", e.Name)
		}
	}
	file := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := parseWithEnv(file, env)
	if err != nil {
		t.Fatalf("nats-server cannot parse %s: %v", path, err)
	}
	return opts
}

// configEnv serialises parses that need variables in this process's
// environment, where nats-server's parser looks them up, so that tests
// running in parallel do not see each other's.
var configEnv sync.Mutex

// parseWithEnv parses a nats-server config file with env set for the
// parse, and the environment restored after it.
func parseWithEnv(file string, env map[string]string) (*server.Options, error) {
	configEnv.Lock()
	defer configEnv.Unlock()
	for k, v := range env {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	return server.ProcessConfigFile(file)
}

// startNATSServers runs the servers of sts with opts[i] each, in this
// process: their listeners move to 127.0.0.1 on free ports and the routes
// follow (a route to <sts>-<i>.<service> goes to server i), the JetStream
// store moves from the volume to a directory of the test's; everything
// else (accounts, users, permissions, limits) is as parsed. It waits until
// every server's /healthz is 200 and stops them when the test ends.
func startNATSServers(t *testing.T, sts *appsv1.StatefulSet, opts []*server.Options) []*server.Server {
	t.Helper()
	c := sts.Spec.Template.Spec.Containers[0]
	clusterPorts := make([]int, len(opts))
	for i := range opts {
		clusterPorts[i] = freePort(t)
	}
	var servers []*server.Server
	for i, o := range opts {
		o.Host, o.Port = "127.0.0.1", freePort(t)
		o.HTTPHost, o.HTTPPort = "127.0.0.1", freePort(t)
		if o.Cluster.Port != 0 {
			o.Cluster.Host, o.Cluster.Port = "127.0.0.1", clusterPorts[i]
		}
		for _, r := range o.Routes {
			host := strings.SplitN(r.Hostname(), ".", 2)[0]
			n, err := strconv.Atoi(strings.TrimPrefix(host, sts.Name+"-"))
			if err != nil || n < 0 || n >= len(opts) {
				t.Fatalf("route %s leads to no server of StatefulSet %s", r, sts.Name)
			}
			r.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(clusterPorts[n]))
		}
		moved := false
		for _, m := range c.VolumeMounts {
			if rel, ok := strings.CutPrefix(o.StoreDir, m.MountPath); ok && (rel == "" || rel[0] == '/') {
				o.StoreDir, moved = filepath.Join(t.TempDir(), rel), true
			}
		}
		if o.JetStream && !moved {
			t.Fatalf("nats-server %d stores JetStream in %s, on no volume of the StatefulSet", i, o.StoreDir)
		}
		o.NoSigs = true
		o.LogFile = filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.log", sts.Name, i))
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		s.ConfigureLogger()
		s.Start()
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
			if t.Failed() {
				t.Logf("==== %s-%d log, last lines:\n%s", sts.Name, i, lastLines(o.LogFile, 30))
			}
		})
		servers = append(servers, s)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var notReady []string
		for i, s := range servers {
			if st := s.Healthz(nil); st.Status != "ok" {
				notReady = append(notReady, fmt.Sprintf("%s-%d: %s %s", sts.Name, i, st.Status, st.Error))
			}
		}
		if len(notReady) == 0 {
			return servers
		}
		if time.Now().After(deadline) {
			t.Fatalf("NATS servers not healthy: %s", strings.Join(notReady, "; "))
		}
	}
}

// clientHost is the host:port of a server's client listener.
func clientHost(t *testing.T, s *server.Server) string {
	t.Helper()
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// freePort is a port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubebridge/kubebridge/internal/natsconf"
	"github.com/kubebridge/kubebridge/internal/natstest"
)

// certScript runs hack/nats-certs.sh --out-dir once for this test binary;
// TestMain removes what it wrote.
var certScript natsconf.Script

// natsCerts is the directory hack/nats-certs.sh --out-dir wrote for
// namespace kubebridge (natsconf.ScriptNamespace): <dir>/<secret>/<key>
// holds the files of each Secret of overlays/with-nats's TLS.
func natsCerts(t *testing.T) natsconf.Certs {
	t.Helper()
	return certScript.Certs(t, deployModuleRoot(t))
}

// natsServerOptions parses the nats.conf that server i of the StatefulSet
// sts runs (configMaps: name → data), with the values of the Secrets its
// env names (secrets: name → key → value) and, for the files of the
// Secrets it mounts (its TLS certificates), those in certs.
func natsServerOptions(t *testing.T, sts *appsv1.StatefulSet, configMaps map[string]map[string]string, i int, secrets map[string]map[string]string, certs natsconf.Certs) *server.Options {
	t.Helper()
	return natsconf.Options(t, sts, &sts.Spec.Template.Spec.Containers[0], i, configMaps, func(ref *corev1.SecretKeySelector) string {
		v, ok := secrets[ref.Name][ref.Key]
		if !ok && (ref.Optional == nil || !*ref.Optional) {
			t.Fatalf("nats-server's Secret %s has no key %s", ref.Name, ref.Key)
		}
		return v
	}, certs)
}

// readerSecret is the Secret of overlays/with-nats's readers' client
// certificate (hack/nats-certs.sh, components/cert-manager).
const readerSecret = "kubebridge-nats-reader-tls"

// overlayNATS is a server of overlays/with-nats running in this process,
// and the TLS its clients connect with.
type overlayNATS struct {
	url   string // tls://host:port
	addr  string // host:port
	certs natsconf.Certs
	// bridgeTLS is the bridge's environment that names files of the
	// Secrets it mounts (NATS_CA, NATS_CERT, NATS_KEY), as its Deployment
	// sets it, each file mapped to the one hack/nats-certs.sh wrote.
	bridgeTLS map[string]string
}

// startOverlayNATSAlone runs server 0 of overlays/with-nats's StatefulSet
// in this process, alone (no routes, no cluster), with users' passwords
// and the certificates of hack/nats-certs.sh.
func startOverlayNATSAlone(t *testing.T, users map[string]map[string]string) *overlayNATS {
	t.Helper()
	objs := deployRender(t, filepath.Join(deployModuleRoot(t), "deploy", "kustomize", "overlays", "with-nats"))
	var sts *appsv1.StatefulSet
	configMaps := map[string]map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "StatefulSet":
			sts = &appsv1.StatefulSet{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sts))
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm))
			configMaps[cm.Name] = cm.Data
		}
	}
	if sts == nil {
		t.Fatal("overlays/with-nats has no StatefulSet")
	}
	certs := natsCerts(t)
	opts := natsServerOptions(t, sts, configMaps, 0, users, certs)
	opts.Cluster, opts.Routes = server.ClusterOpts{}, nil
	addr := clientHost(t, startNATSServers(t, sts, []*server.Options{opts})[0])

	d, c, env := deployBridgeEnv(t, objs, natsconf.ScriptNamespace)
	if u, err := url.Parse(env["NATS_URL"]); err != nil || u.Scheme != "tls" {
		t.Fatalf("the bridge's NATS_URL=%s: want tls://", env["NATS_URL"])
	}
	local := natsconf.LocalizeEnv(t, &d.template.Spec, c, certs, env)
	bridgeTLS := map[string]string{}
	for k, v := range local {
		if v != env[k] {
			bridgeTLS[k] = v
		}
	}
	for _, k := range []string{"NATS_CA", "NATS_CERT", "NATS_KEY"} {
		if bridgeTLS[k] == "" {
			t.Fatalf("the bridge's %s=%q is no file of a Secret of hack/nats-certs.sh mounted into it", k, env[k])
		}
	}
	return &overlayNATS{url: "tls://" + addr, addr: addr, certs: certs, bridgeTLS: bridgeTLS}
}

// bridgeOpts are the TLS options of a client with the bridge's files.
func (o *overlayNATS) bridgeOpts() []nats.Option {
	return []nats.Option{nats.RootCAs(o.bridgeTLS["NATS_CA"]), nats.ClientCert(o.bridgeTLS["NATS_CERT"], o.bridgeTLS["NATS_KEY"])}
}

// readerOpts are the TLS options of a client with the readers' Secret.
func (o *overlayNATS) readerOpts() []nats.Option {
	return readerTLS(o.certs)
}

// readerTLS are the TLS options of a client with the readers' Secret's
// files in certs: the CA and the readers' certificate.
func readerTLS(certs natsconf.Certs) []nats.Option {
	return []nats.Option{
		nats.RootCAs(certs.File(readerSecret, "ca.crt")),
		nats.ClientCert(certs.File(readerSecret, "tls.crt"), certs.File(readerSecret, "tls.key")),
	}
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
		clusterPorts[i] = natstest.FreePort(t)
	}
	var servers []*server.Server
	var logs []*natstest.ServerLog
	for i, o := range opts {
		o.Host, o.Port = "127.0.0.1", natstest.FreePort(t)
		o.HTTPHost, o.HTTPPort = "127.0.0.1", natstest.FreePort(t)
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
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		log := natstest.LogToFile(s, filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.log", sts.Name, i)))
		logs = append(logs, log)
		s.Start()
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
			if t.Failed() {
				t.Logf("==== %s-%d log, last lines:\n%s", sts.Name, i, lastLines(log.Path, 30))
			}
		})
		servers = append(servers, s)
	}
	var notReady []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		notReady = notReady[:0]
		for i, s := range servers {
			if err := logs[i].Fatal(); err != nil {
				t.Fatalf("%s-%d: %v", sts.Name, i, err)
			}
			if st := s.Healthz(nil); st.Status != "ok" {
				notReady = append(notReady, fmt.Sprintf("%s-%d: %s %s", sts.Name, i, st.Status, st.Error))
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		t.Fatalf("NATS servers not healthy after 2 minutes: %s", strings.Join(notReady, "; "))
	}
	return servers
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

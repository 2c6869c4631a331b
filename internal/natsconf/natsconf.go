package natsconf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Options parses the configuration that container c of server i of the
// StatefulSet sts runs: the file of the ConfigMap (configMaps: name → key
// → data) mounted at the path of --config, its variables taken from c's
// environment, with the pod's name for metadata.name and secret's answer
// for a Secret's key. Paths in the file on the Secrets c mounts become
// certs' files of those Secrets (the TLS certificates), which nats-server
// reads as it parses.
func Options(t testing.TB, sts *appsv1.StatefulSet, c *corev1.Container, i int, configMaps map[string]map[string]string, secret func(*corev1.SecretKeySelector) string, certs Certs) *server.Options {
	t.Helper()
	args := append(slices.Clone(c.Command), c.Args...)
	at := slices.Index(args, "--config")
	if at < 0 || at+1 >= len(args) {
		t.Fatalf("nats-server runs %q: want --config <file>", args)
	}
	path := args[at+1]
	var data string
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, m.MountPath+"/")
		if !ok {
			continue
		}
		vols := sts.Spec.Template.Spec.Volumes
		v := vols[slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == m.Name })]
		if v.ConfigMap == nil {
			t.Fatalf("%s is on volume %s, which is not a ConfigMap", path, m.Name)
		}
		data = configMaps[v.ConfigMap.Name][rel]
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
			env[e.Name] = secret(src.SecretKeyRef)
		case src.ResourceFieldRef != nil:
			// GOMEMLIMIT and the like: nothing for a server in this process.
		default:
			t.Fatalf("nats-server's %s: a valueFrom this test does not know", e.Name)
		}
	}
	file := filepath.Join(t.TempDir(), "nats.conf")
	data = localizeConfig(&sts.Spec.Template.Spec, c, certs, data)
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
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
		defer func() {
			// k was just set, so putting it back cannot fail.
			if had {
				_ = os.Setenv(k, old)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	return server.ProcessConfigFile(file)
}

package kustomize_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// certSecrets are the Secrets hack/nats-certs.sh writes, and
// components/cert-manager has cert-manager write.
var certSecrets = []string{"kubebridge-nats-ca", "nats-server-tls", "nats-routes-tls", "kubebridge-nats-tls", "kubebridge-nats-reader-tls"}

var (
	certsOnce sync.Once
	certsDir  string
	certsErr  error
)

// natsCerts runs hack/nats-certs.sh --out-dir for namespace kubebridge,
// once per test binary (it takes seconds on a busy machine), and returns
// the directory: <dir>/<secret>/<key> holds each Secret's files. TestMain
// removes it.
func natsCerts(t testing.TB) string {
	t.Helper()
	certsOnce.Do(func() {
		certsDir, certsErr = os.MkdirTemp("", "nats-certs-")
		if certsErr != nil {
			return
		}
		cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "nats-certs.sh"), "--out-dir", certsDir, "kubebridge")
		if out, err := cmd.CombinedOutput(); err != nil {
			certsErr = fmt.Errorf("hack/nats-certs.sh: %w\n%s", err, out)
		}
	})
	if certsErr != nil {
		t.Fatal(certsErr)
	}
	return certsDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if certsDir != "" {
		_ = os.RemoveAll(certsDir)
	}
	os.Exit(code)
}

// secretFile resolves path, as container c of pod sees it, to the Secret
// and key whose file it is; ok is false for a path on no Secret volume.
func secretFile(pod *corev1.PodSpec, c *corev1.Container, path string) (secret, key string, ok bool) {
	for _, m := range c.VolumeMounts {
		rel, under := strings.CutPrefix(path, m.MountPath+"/")
		if !under || m.SubPath != "" {
			continue
		}
		at := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if at < 0 || pod.Volumes[at].Secret == nil {
			return "", "", false
		}
		s := pod.Volumes[at].Secret
		if len(s.Items) == 0 {
			return s.SecretName, rel, true
		}
		for _, it := range s.Items {
			if it.Path == rel {
				return s.SecretName, it.Key, true
			}
		}
		return "", "", false // not projected
	}
	return "", "", false
}

// localPath is where, under certs (natsCerts), the file of a Secret's key
// is; "" for a Secret the script does not write.
func localPath(certs, secret, key string) string {
	if !slices.Contains(certSecrets, secret) {
		return ""
	}
	return filepath.Join(certs, secret, key)
}

var absPathRE = regexp.MustCompile(`/[A-Za-z0-9._/-]+`)

// localizeConfig replaces, in a configuration file container c of pod
// reads, every path on a mounted Secret of the script's with the script's
// file for that Secret's key under certs. Other paths stay: a TLS file
// that is on no such Secret cannot be read, and the parse fails.
func localizeConfig(pod *corev1.PodSpec, c *corev1.Container, certs, data string) string {
	return absPathRE.ReplaceAllStringFunc(data, func(p string) string {
		if secret, key, ok := secretFile(pod, c, p); ok {
			if local := localPath(certs, secret, key); local != "" {
				return local
			}
		}
		return p
	})
}

// localizeEnv returns env with each value that is a file on a mounted
// Secret of the script's replaced by the script's file, so that
// config.Load, which checks that the files exist, reads them.
func localizeEnv(t testing.TB, bc bridgeContainer, env map[string]string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
		secret, key, ok := secretFile(&bc.pod.Spec, bc.container, v)
		if !ok || !slices.Contains(certSecrets, secret) {
			continue
		}
		out[k] = localPath(natsCerts(t), secret, key)
		if _, err := os.Stat(out[k]); err != nil {
			t.Errorf("%s=%s: Secret %s, which hack/nats-certs.sh writes, has no key %s", k, v, secret, key)
		}
	}
	return out
}

package natsconf

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

// Certs is a directory holding the files of Secrets the way
// hack/nats-certs.sh --out-dir writes them: <dir>/<secret>/<key>. A path
// in a container that is a key of one of these Secrets, mounted, is
// replaced by that file (Options, LocalizeEnv), so that a test on this
// machine reads the certificates a pod would.
type Certs string

// File is the file of key of Secret secret; "" when c holds no files of
// that Secret.
func (c Certs) File(secret, key string) string {
	if c == "" || secret == "" {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(string(c), secret)); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Join(string(c), secret, key)
}

// Secrets are the names of the Secrets c holds files of, sorted.
func (c Certs) Secrets() ([]string, error) {
	entries, err := os.ReadDir(string(c))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// WriteCerts writes secrets (name → key → data), as the kubelet would
// mount them, into a directory of the test's in the layout of Certs: for
// Secrets that come from an apiserver rather than from
// hack/nats-certs.sh --out-dir.
func WriteCerts(t testing.TB, secrets map[string]map[string]string) Certs {
	t.Helper()
	dir := t.TempDir()
	for name, data := range secrets {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		for key, v := range data {
			if err := os.WriteFile(filepath.Join(dir, name, key), []byte(v), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Certs(dir)
}

// ScriptNamespace is the namespace the certificates of Script are made
// for: the overlays' (their DNS names name it).
const ScriptNamespace = "kubebridge"

// Script runs hack/nats-certs.sh --out-dir once for the tests of one
// binary (it takes seconds on a busy machine): a test binary keeps one in
// a variable of its own, and removes its files in TestMain. The zero
// value is ready to use.
type Script struct {
	once  sync.Once
	certs Certs
	err   error
}

// Certs runs hack/nats-certs.sh --out-dir for ScriptNamespace, the
// first time, from the repository at repoRoot, and returns the directory
// it wrote.
func (s *Script) Certs(t testing.TB, repoRoot string) Certs {
	t.Helper()
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "nats-certs-")
		if err != nil {
			s.err = err
			return
		}
		s.certs = Certs(dir)
		cmd := exec.Command("bash", filepath.Join(repoRoot, "hack", "nats-certs.sh"), "--out-dir", dir, ScriptNamespace)
		if out, err := cmd.CombinedOutput(); err != nil {
			s.err = fmt.Errorf("hack/nats-certs.sh --out-dir: %w\n%s", err, out)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.certs
}

// Remove deletes the files Certs wrote, if it ran.
func (s *Script) Remove() error {
	if s.certs == "" {
		return nil
	}
	return os.RemoveAll(string(s.certs))
}

// SecretFile resolves path, as container c of pod sees it, to the Secret
// and key whose file it is; ok is false for a path on no Secret volume
// (or on one that does not project it).
func SecretFile(pod *corev1.PodSpec, c *corev1.Container, path string) (secret, key string, ok bool) {
	for _, m := range c.VolumeMounts {
		rel, under := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
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
		return "", "", false
	}
	return "", "", false
}

var absPathRE = regexp.MustCompile(`/[A-Za-z0-9._/-]+`)

// localizeConfig replaces, in a configuration file container c of pod
// reads, every path on a mounted Secret that certs holds with certs' file
// of that key. Other paths stay: a TLS file on no such Secret cannot be
// read, and the parse fails naming it.
func localizeConfig(pod *corev1.PodSpec, c *corev1.Container, certs Certs, data string) string {
	return absPathRE.ReplaceAllStringFunc(data, func(p string) string {
		if secret, key, ok := SecretFile(pod, c, p); ok {
			if local := certs.File(secret, key); local != "" {
				return local
			}
		}
		return p
	})
}

// LocalizeEnv returns env, the environment of container c of pod, with
// each value that is a file on a mounted Secret certs holds replaced by
// certs' file, so that a process here (or config.Load, which reads them)
// finds the files the pod would. A key the Secret's files lack is an
// error of the test.
func LocalizeEnv(t testing.TB, pod *corev1.PodSpec, c *corev1.Container, certs Certs, env map[string]string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
		secret, key, ok := SecretFile(pod, c, v)
		if !ok || certs.File(secret, key) == "" {
			continue
		}
		out[k] = certs.File(secret, key)
		if _, err := os.Stat(out[k]); err != nil {
			t.Errorf("%s=%s: Secret %s has no key %s", k, v, secret, key)
		}
	}
	return out
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebridge/kubebridge/internal/netproxy"
)

// startProxy starts a TCP proxy to target that the test controls (pause,
// cut, latency: see netproxy), closed when the test ends.
func startProxy(t *testing.T, target string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// kubeconfigVia writes a copy of the test kubeconfig whose server is the
// proxy, and returns its path.
func (h *harness) kubeconfigVia(p *netproxy.Proxy) string {
	h.t.Helper()
	b, err := os.ReadFile(h.env.KubeconfigPath())
	if err != nil {
		h.t.Fatal(err)
	}
	direct := strings.TrimPrefix(h.env.APIServerURL(), "https://")
	if !strings.Contains(string(b), direct) {
		h.t.Fatalf("kubeconfig %s does not name %s", h.env.KubeconfigPath(), direct)
	}
	path := filepath.Join(h.t.TempDir(), "kubeconfig-via-proxy")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), direct, p.Addr())), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return path
}

package kustomize_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubebridge/kubebridge/internal/natsconf"
)

// certScript runs hack/nats-certs.sh --out-dir once for this test binary;
// TestMain removes what it wrote.
var certScript natsconf.Script

// natsCerts is the directory hack/nats-certs.sh --out-dir wrote for
// namespace kubebridge: <dir>/<secret>/<key> holds each Secret's files.
func natsCerts(t testing.TB) natsconf.Certs {
	t.Helper()
	return certScript.Certs(t, filepath.Join("..", ".."))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := certScript.Remove(); err != nil {
		code = 1
	}
	os.Exit(code)
}

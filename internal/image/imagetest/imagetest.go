package imagetest

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry starts an in-process registry that refuses whoever does not
// send user and password (basic auth), until the test ends. It returns its
// host:port.
func Registry(t testing.TB, user, password string) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// DockerConfig returns a directory for DOCKER_CONFIG whose config.json
// holds user and password for host, as docker login writes them.
func DockerConfig(t testing.TB, host, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`, host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

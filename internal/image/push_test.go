package image

import (
	"context"
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
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushWithDockerLoginCredentials pushes a layout to a registry that
// wants a password, with the credentials where docker login leaves them
// ($DOCKER_CONFIG/config.json), and pulls the index back by its tag: the
// same digest. Without the credentials the registry refuses the push.
func TestPushWithDockerLoginCredentials(t *testing.T) {
	const user, password = "ci", "s3cret"
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	spec := Kubebridge()
	idx := buildTest(t, spec, testMeta(), fakeBinaries(t, spec))
	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(dir, idx, name.MustParseReference("example.com/kubebridge:v1")); err != nil {
		t.Fatal(err)
	}
	ref := host + "/kubebridge/kubebridge:test"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if _, err := Push(ctx, dir, ref); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("push without credentials: %v, want the registry's refusal", err)
	}

	configDir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(filepath.Join(configDir, "config.json"), fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`, host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", configDir)
	pushed, err := Push(ctx, dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, idx); pushed != want {
		t.Errorf("Push reports %s, the layout's index is %s", pushed, want)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r, remote.WithContext(ctx), remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	if err != nil {
		t.Fatal(err)
	}
	if d := digestOf(t, got); d != pushed {
		t.Errorf("the registry serves %s under the tag, pushed %s", d, pushed)
	}
	_, images, err := Platforms(got)
	if err != nil || len(images) != len(testPlatforms) {
		t.Fatalf("pulled index: %d images (%v)", len(images), err)
	}
	if data, err := ReadFile(images[1], "/bridge"); err != nil || string(data) != "bridge for linux/arm64" {
		t.Errorf("pulled linux/arm64 /bridge: %q (%v)", data, err)
	}
}

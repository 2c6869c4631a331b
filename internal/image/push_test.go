package image

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubebridge/kubebridge/internal/image/imagetest"
)

// TestPushWithDockerLoginCredentials pushes a layout to a registry that
// wants a password, with the credentials where docker login leaves them
// ($DOCKER_CONFIG/config.json), and pulls the index back by its tag: the
// same digest. Without the credentials the registry refuses the push.
func TestPushWithDockerLoginCredentials(t *testing.T) {
	const user, password = "ci", "s3cret"
	host := imagetest.Registry(t, user, password)

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

	t.Setenv("DOCKER_CONFIG", imagetest.DockerConfig(t, host, user, password))
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

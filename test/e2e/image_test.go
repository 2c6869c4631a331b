package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubebridge/kubebridge/internal/image"
	"github.com/kubebridge/kubebridge/internal/image/imagetest"
)

// gitOutput runs git in the module root.
func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = deployModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestImage opens what make image built, as a registry or a runtime would:
// an index of linux/amd64 and linux/arm64; in each image's config the user
// 65532:65532, the entrypoint /bridge and the four OCI annotations (also on
// the manifests and the index) naming this commit; in its layers exactly
// the two static binaries for that platform, with the CA roots compiled
// in, and nothing else (no shell, no package manager). The host platform's
// bridge prints the version make build stamps. A second make image gives
// the same index digest, and make image-push puts that index in a registry
// that wants docker login's credentials.
func TestImage(t *testing.T) {
	// Its own NATS, namespaces and names: it runs beside the others
	// that do (testenv's shared NATS is not touched).
	t.Parallel()
	if testing.Short() {
		t.Skip("make image compiles for two platforms")
	}
	first := theImage(t)
	version := strings.TrimSpace(mustMake(t, "-s", "version"))
	revision := gitOutput(t, "rev-parse", "HEAD")
	if first.head != revision {
		t.Fatalf("HEAD moved from %s to %s while the tests ran: the shared image is of another commit (commit while no test runs)", first.head, revision)
	}
	commitTime, err := strconv.ParseInt(gitOutput(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/kubebridge/kubebridge",
		"org.opencontainers.image.created":  time.Unix(commitTime, 0).UTC().Format(time.RFC3339),
	}
	if first.image.Ref != "ghcr.io/kubebridge/kubebridge:"+version {
		t.Errorf("the layout names the image %q, want ghcr.io/kubebridge/kubebridge:%s", first.image.Ref, version)
	}
	idx := first.image.Index
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	checkImageAnnotations(t, "the index", im.Annotations, want)

	platforms, images, err := image.Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range platforms {
		names = append(names, p.String())
	}
	if !slices.Equal(names, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("the index holds %q, want linux/amd64 and linux/arm64", names)
	}
	var hostBridge []byte
	for i, img := range images {
		p := platforms[i]
		bridge := checkPlatformImage(t, first, p, img, want, version)
		if p.OS == "linux" && p.Architecture == runtime.GOARCH {
			hostBridge = bridge
		}
	}

	// The host platform's bridge, run: the version make build stamps.
	dir := t.TempDir()
	extracted := filepath.Join(dir, "bridge-from-image")
	if err := os.WriteFile(extracted, hostBridge, 0o755); err != nil {
		t.Fatal(err)
	}
	mustMake(t, "build", "BIN_DIR="+filepath.Join(dir, "make-build"))
	fromImage, fromBuild := runVersion(t, extracted), runVersion(t, filepath.Join(dir, "make-build", "bridge"))
	if fromImage != fromBuild || fromImage != version {
		t.Errorf("bridge --version: %q from the image, %q from make build, make version says %q", fromImage, fromBuild, version)
	}

	// Reproducible: a second build of this commit.
	second, err := makeImage(context.Background(), filepath.Join(dir, "image-2"), false)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := indexDigest(t, first.image.Index), indexDigest(t, second.image.Index)
	if d1 != d2 {
		t.Errorf("two builds of one commit: index %s and %s", d1, d2)
	}
	t1, t2 := readAll(t, first.tarball), readAll(t, second.tarball)
	if !bytes.Equal(t1, t2) {
		t.Errorf("two builds of one commit: the tarballs differ (%d and %d bytes)", len(t1), len(t2))
	}
	t.Logf("index %s (both builds); make image took %v, then %v; image.tar %d bytes", d1, first.took.Round(time.Millisecond), second.took.Round(time.Millisecond), len(t1))

	checkImagePush(t, first, d1)
}

// checkPlatformImage checks one platform's image and returns its /bridge.
func checkPlatformImage(t *testing.T, b *imageBuild, p v1.Platform, img v1.Image, want map[string]string, version string) []byte {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	checkImageAnnotations(t, p.String()+" manifest", m.Annotations, want)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkImageAnnotations(t, p.String()+" config labels", cf.Config.Labels, want)
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("%s: the config says %s/%s", p, cf.OS, cf.Architecture)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", p, cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/bridge"}) || len(cf.Config.Cmd) > 0 {
		t.Errorf("%s: entrypoint %q, cmd %q; want entrypoint [/bridge] and no cmd", p, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	entries, err := b.files(p, img)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		h := e.header
		files = append(files, "/"+h.Name)
		if h.Typeflag != '0' || h.Uid != 0 || h.Gid != 0 || h.Mode&0o022 != 0 {
			t.Errorf("%s: /%s: type %q, owner %d:%d, mode %o; want a regular file of root that only root may change", p, h.Name, h.Typeflag, h.Uid, h.Gid, h.Mode)
		}
	}
	// Exactly the binaries: no shell, no package manager, no CA bundle (the
	// roots are in the binaries, checked below).
	if !slices.Equal(files, []string{"/bridge", "/kubebridge"}) {
		t.Errorf("%s: the layers hold %q, want exactly /bridge and /kubebridge", p, files)
	}
	layers, _ := img.Layers()
	var compressed int64
	for _, l := range layers {
		s, _ := l.Size()
		compressed += s
	}
	var bridge []byte
	for _, f := range []string{"/bridge", "/kubebridge"} {
		i := slices.IndexFunc(entries, func(e imageFile) bool { return "/"+e.header.Name == f && e.header.Typeflag == tar.TypeReg })
		if i < 0 {
			t.Errorf("%s: %s: no such file in the image", p, f)
			continue
		}
		data := entries[i].data
		checkStaticBinary(t, p, f, data, version)
		if f == "/bridge" {
			bridge = data
		}
	}
	t.Logf("%s: %d layer(s), %d bytes compressed, /bridge %d bytes", p, len(layers), compressed, len(bridge))
	return bridge
}

// checkStaticBinary: an ELF executable for p, with no dynamic loader, built
// by make build (cgo off, -trimpath, the version stamped) with the CA roots
// of golang.org/x/crypto/x509roots/fallback linked in.
func checkStaticBinary(t *testing.T, p v1.Platform, path string, data []byte, version string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s %s: not an ELF file: %v", p, path, err)
		return
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != machine {
		t.Errorf("%s %s: built for %v", p, path, f.Machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s %s: has a dynamic loader: not static", p, path)
		}
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s %s: no Go build info: %v", p, path, err)
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"] != p.OS || settings["GOARCH"] != p.Architecture {
		t.Errorf("%s %s: built with %v; want CGO_ENABLED=0, -trimpath, GOOS=%s, GOARCH=%s", p, path, settings, p.OS, p.Architecture)
	}
	// Go leaves -ldflags out of the build info under -trimpath; the stamped
	// version is in the data (and the host's bridge prints it, below).
	if !bytes.Contains(data, []byte(version)) {
		t.Errorf("%s %s: the version %s is not stamped in", p, path, version)
	}
	if !slices.ContainsFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
		t.Errorf("%s %s: golang.org/x/crypto/x509roots/fallback is not linked in: no CA roots in a scratch image", p, path)
	}
}

func checkImageAnnotations(t *testing.T, where string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", where, k, got[k], v)
		}
	}
}

// checkImagePush runs make image-push against an in-process registry that
// wants a password, with the password where docker login leaves it, and
// reads the index back under the tag.
func checkImagePush(t *testing.T, b *imageBuild, digest v1.Hash) {
	t.Helper()
	const user, password = "kubebridge-ci", "push-secret"
	host := imagetest.Registry(t, user, password)
	dockerConfig := imagetest.DockerConfig(t, host, user, password)
	ref := host + "/kubebridge/kubebridge:e2e"
	out, err := runMake(t, 5*time.Minute, []string{"DOCKER_CONFIG=" + dockerConfig}, "image-push", "IMAGE="+ref, "IMAGE_DIR="+b.layout)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(r, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	if err != nil {
		t.Fatal(err)
	}
	if got := indexDigest(t, pulled); got != digest {
		t.Errorf("after make image-push, the registry serves %s under %s; built %s", got, ref, digest)
	}
	t.Logf("make image-push: %s", strings.TrimSpace(out))
}

func mustMake(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runMake(t, imageBuildTimeout, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

func indexDigest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

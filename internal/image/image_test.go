package image

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

func testMeta() Metadata {
	return Metadata{Version: "v0.0.0-test", Revision: "0123456789abcdef", Source: SourceURL, Created: time.Unix(1700000000, 0)}
}

// fakeBinaries writes a file per Spec binary and platform under a new
// directory, as make build leaves them: <dir>/<os>/<arch>/<binary>. The
// content names the platform, so each platform's image differs.
func fakeBinaries(t *testing.T, spec Spec) func(v1.Platform) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range testPlatforms {
		dir := filepath.Join(root, p.OS, p.Architecture)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range spec.Files {
			if err := os.WriteFile(filepath.Join(dir, f.Binary), []byte(f.Binary+" for "+p.String()), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func(p v1.Platform) string { return filepath.Join(root, p.OS, p.Architecture) }
}

func buildTest(t *testing.T, spec Spec, meta Metadata, bins func(v1.Platform) string) v1.ImageIndex {
	t.Helper()
	idx, err := Build(spec, meta, testPlatforms, bins)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func digestOf(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuildIsReproducible(t *testing.T) {
	spec := Kubebridge()
	bins := fakeBinaries(t, spec)
	a, b := digestOf(t, buildTest(t, spec, testMeta(), bins)), digestOf(t, buildTest(t, spec, testMeta(), bins))
	if a != b {
		t.Fatalf("two builds of the same binaries and metadata: %s and %s", a, b)
	}
	// The layout written from either is the same too, file by file.
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	ref := name.MustParseReference("example.com/kubebridge:test")
	for _, dir := range []string{dirA, dirB} {
		if err := WriteLayout(dir, buildTest(t, spec, testMeta(), bins), ref); err != nil {
			t.Fatal(err)
		}
		if err := WriteArchive(dir+".tar", dir, testMeta().Created); err != nil {
			t.Fatal(err)
		}
	}
	ta, _ := os.ReadFile(dirA + ".tar")
	tb, _ := os.ReadFile(dirB + ".tar")
	if len(ta) == 0 || string(ta) != string(tb) {
		t.Errorf("the two tarballs differ (%d and %d bytes)", len(ta), len(tb))
	}
	// What the digest depends on: the commit time, and the binaries.
	later := testMeta()
	later.Created = later.Created.Add(time.Second)
	if c := digestOf(t, buildTest(t, spec, later, bins)); c == a {
		t.Errorf("a different created time gives the same digest %s", c)
	}
	if err := os.WriteFile(filepath.Join(bins(testPlatforms[1]), "bridge"), []byte("changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := digestOf(t, buildTest(t, spec, testMeta(), bins)); c == a {
		t.Errorf("a changed binary gives the same digest %s", c)
	}
}

func TestImageDeclaresTheSpec(t *testing.T) {
	spec := Kubebridge()
	meta := testMeta()
	idx := buildTest(t, spec, meta, fakeBinaries(t, spec))
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index media type %s", im.MediaType)
	}
	checkAnnotations(t, "index", im.Annotations, meta)
	platforms, images, err := Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(platforms, testPlatforms, func(a, b v1.Platform) bool { return a.Equals(b) }) {
		t.Fatalf("platforms %v, want %v", platforms, testPlatforms)
	}
	for i, img := range images {
		p := platforms[i]
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		checkAnnotations(t, p.String()+" manifest", m.Annotations, meta)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != p.OS || cf.Architecture != p.Architecture {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if !cf.Created.Equal(meta.Created) {
			t.Errorf("%s: created %v, want %v", p, cf.Created, meta.Created)
		}
		if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/bridge"}) || len(cf.Config.Cmd) != 0 {
			t.Errorf("%s: user %q, entrypoint %q, cmd %q", p, cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd)
		}
		checkAnnotations(t, p.String()+" config labels", cf.Config.Labels, meta)
		entries, err := Entries(img)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Header.Name)
			if e.Header.Typeflag != tar.TypeReg || e.Header.Uid != 0 || e.Header.Gid != 0 || e.Header.Mode != fileMode || !e.Header.ModTime.Equal(meta.Created) {
				t.Errorf("%s: %s: type %c, owner %d:%d, mode %o, time %v", p, e.Header.Name, e.Header.Typeflag, e.Header.Uid, e.Header.Gid, e.Header.Mode, e.Header.ModTime)
			}
		}
		if !slices.Equal(got, []string{"bridge", "kubebridge"}) {
			t.Errorf("%s: files %q, want bridge and kubebridge", p, got)
		}
		data, err := ReadFile(img, "/bridge")
		if err != nil || string(data) != "bridge for "+p.String() {
			t.Errorf("%s: /bridge holds %q (%v)", p, data, err)
		}
	}
}

func checkAnnotations(t *testing.T, where string, got map[string]string, meta Metadata) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.version":  meta.Version,
		"org.opencontainers.image.revision": meta.Revision,
		"org.opencontainers.image.source":   meta.Source,
		"org.opencontainers.image.created":  meta.Created.UTC().Format(time.RFC3339),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", where, k, got[k], v)
		}
	}
}

func TestBuildRefusesMissingMetadataAndBinaries(t *testing.T) {
	spec := Kubebridge()
	bins := fakeBinaries(t, spec)
	meta := testMeta()
	meta.Revision = ""
	if _, err := Build(spec, meta, testPlatforms, bins); err == nil || !strings.Contains(err.Error(), "revision") {
		t.Errorf("no revision: %v", err)
	}
	spec.Files = append(spec.Files, File{Path: "/missing", Binary: "missing"})
	if _, err := Build(spec, testMeta(), testPlatforms, bins); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing binary: %v", err)
	}
}

// TestArchiveLoads reads the tarball as each kind of loader does: the OCI
// layout (podman, docker with containerd) and docker save's manifest.json
// (docker's classic store), whose paths must lead to the first image's
// config and layers.
func TestArchiveLoads(t *testing.T) {
	spec := Kubebridge()
	idx := buildTest(t, spec, testMeta(), fakeBinaries(t, spec))
	dir := filepath.Join(t.TempDir(), "layout")
	ref := name.MustParseReference("example.com/kubebridge:v1")
	if err := WriteLayout(dir, idx, ref); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.Ref != "example.com/kubebridge:v1" || digestOf(t, l.Index) != digestOf(t, idx) {
		t.Errorf("layout: ref %q, digest %s, want %s", l.Ref, digestOf(t, l.Index), digestOf(t, idx))
	}
	if err := WriteLayout(dir, idx, ref); err == nil {
		t.Errorf("WriteLayout into a non-empty directory did not fail")
	}
	tarPath := dir + ".tar"
	if err := WriteArchive(tarPath, dir, testMeta().Created); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, tarPath)
	for _, f := range []string{"oci-layout", "index.json", "manifest.json"} {
		if _, ok := files[f]; !ok {
			t.Errorf("the tarball has no %s", f)
		}
	}
	if string(files["index.json"]) != string(mustRead(t, filepath.Join(dir, "index.json"))) {
		t.Errorf("the tarball's index.json is not the layout's")
	}
	var legacy []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &legacy); err != nil {
		t.Fatal(err)
	}
	_, images, err := Platforms(idx)
	if err != nil {
		t.Fatal(err)
	}
	cfgName, _ := images[0].ConfigName()
	layers, _ := images[0].Layers()
	layerDigest, _ := layers[0].Digest()
	if len(legacy) != 1 || legacy[0].Config != "blobs/sha256/"+cfgName.Hex || !slices.Equal(legacy[0].RepoTags, []string{"example.com/kubebridge:v1"}) ||
		!slices.Equal(legacy[0].Layers, []string{"blobs/sha256/" + layerDigest.Hex}) {
		t.Errorf("manifest.json %s: want the first image (config %s, layer %s)", files["manifest.json"], cfgName.Hex, layerDigest.Hex)
	}
	for _, p := range append([]string{legacy[0].Config}, legacy[0].Layers...) {
		if _, ok := files[p]; !ok {
			t.Errorf("manifest.json names %s, which the tarball does not hold", p)
		}
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

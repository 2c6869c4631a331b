package image

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fileMode is the mode of every file in the image: what `go build` leaves
// and a Dockerfile COPY keeps. The files belong to root, so the user
// 65532 can run them but not change them.
const fileMode = 0o755

// Build assembles one image per platform, each from the binaries in
// binDir(platform), and returns their index. Nothing is pulled: every
// image starts from scratch. Layers, configs, manifests and the index use
// the OCI media types, and every timestamp is meta.Created, so the same
// binaries give the same digests.
func Build(spec Spec, meta Metadata, platforms []v1.Platform, binDir func(v1.Platform) string) (v1.ImageIndex, error) {
	if err := meta.validate(); err != nil {
		return nil, err
	}
	if len(platforms) == 0 {
		return nil, fmt.Errorf("image: no platforms")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := buildImage(spec, meta, p, binDir(p))
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		platform := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	out, ok := mutate.Annotations(idx, meta.Annotations()).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("image: annotating the index did not give an index")
	}
	return out, nil
}

func buildImage(spec Spec, meta Metadata, p v1.Platform, dir string) (v1.Image, error) {
	var paths []string
	for _, f := range spec.Files {
		src := filepath.Join(dir, f.Binary)
		if fi, err := os.Stat(src); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", src)
		}
		paths = append(paths, f.Path)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return layerTar(spec.Files, dir, meta)
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: meta.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   created,
		CreatedBy: "kubebridge image build: " + strings.Join(paths, " "),
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	cf.Config.User = spec.User
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = meta.Annotations()
	if len(spec.ExposedPorts) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, port := range spec.ExposedPorts {
			cf.Config.ExposedPorts[port] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	out, ok := mutate.Annotations(img, meta.Annotations()).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotating the image did not give an image")
	}
	return out, nil
}

// layerTar streams the layer: the files in spec order, owned by root, with
// meta.Created as their time and nothing of the build machine (no user
// names, no access times).
func layerTar(files []File, dir string, meta Metadata) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeLayerTar(pw, files, dir, meta))
	}()
	return pr, nil
}

func writeLayerTar(w io.Writer, files []File, dir string, meta Metadata) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		src, err := os.Open(filepath.Join(dir, f.Binary))
		if err != nil {
			return err
		}
		fi, err := src.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{
				Typeflag: tar.TypeReg,
				Name:     strings.TrimPrefix(f.Path, "/"),
				Mode:     fileMode,
				Size:     fi.Size(),
				ModTime:  meta.Created.UTC(),
				Format:   tar.FormatUSTAR,
			})
		}
		if err == nil {
			_, err = io.Copy(tw, src)
		}
		if cerr := src.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

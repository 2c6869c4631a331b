package image

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout writes idx as an OCI image layout in dir, which must not
// exist yet or be empty. Its index.json has one entry, the index, named
// ref (the layout form that skopeo copy --all and docker save write; ref
// is kept whole, registry and tag, as containerd wants it).
func WriteLayout(dir string, idx v1.ImageIndex, ref name.Reference) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("image layout %s: the directory is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:        ref.Name(),
		annotationContainerdName: ref.Name(),
	}))
}

// Layout is an OCI image layout written by WriteLayout.
type Layout struct {
	Path  layout.Path
	Index v1.ImageIndex
	// Ref is the name index.json gives the index.
	Ref string
}

// OpenLayout reads the layout in dir: its index.json must hold exactly one
// image index.
func OpenLayout(dir string) (*Layout, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("image layout %s: index.json has %d entries, want one image index", dir, len(im.Manifests))
	}
	d := im.Manifests[0]
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	return &Layout{Path: p, Index: idx, Ref: d.Annotations[AnnotationRefName]}, nil
}

// Platforms lists the index's images with their platforms, in index order.
func Platforms(idx v1.ImageIndex) ([]v1.Platform, []v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	var platforms []v1.Platform
	var images []v1.Image
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return nil, nil, fmt.Errorf("image %s in the index has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, nil, err
		}
		platforms = append(platforms, *d.Platform)
		images = append(images, img)
	}
	return platforms, images, nil
}

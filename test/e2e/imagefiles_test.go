package e2e

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// imageFile is one file of an image's filesystem: its tar header and, for
// a regular file, its content.
type imageFile struct {
	header *tar.Header
	data   []byte
}

// imageFiles reads every file of img in one pass over its layers,
// flattened as a container runtime unpacks them. Each pass decompresses
// two Go binaries, which under -race takes the better part of a minute on
// a small machine: TestImage and the rehearsals read each platform's
// files once, through imageBuild.files.
func imageFiles(img v1.Image) ([]imageFile, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []imageFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		f := imageFile{header: h}
		if h.Typeflag == tar.TypeReg {
			if f.data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		out = append(out, f)
	}
}

// platformFiles caches imageFiles per platform of one build.
type platformFiles struct {
	mu    sync.Mutex
	files map[string][]imageFile // platform → its files
}

// files returns the files of the build's image for platform p (img),
// reading them on first use.
func (b *imageBuild) files(p v1.Platform, img v1.Image) ([]imageFile, error) {
	b.read.mu.Lock()
	defer b.read.mu.Unlock()
	if fs, ok := b.read.files[p.String()]; ok {
		return fs, nil
	}
	fs, err := imageFiles(img)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if b.read.files == nil {
		b.read.files = map[string][]imageFile{}
	}
	b.read.files[p.String()] = fs
	return fs, nil
}

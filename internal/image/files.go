package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Entry is one entry of a layer's tar, as an image test inspects it.
type Entry struct {
	Layer  int
	Header *tar.Header
}

// Entries lists every tar entry of every layer of img, in order.
func Entries(img v1.Image) ([]Entry, error) {
	var out []Entry
	err := walkLayers(img, func(layer int, h *tar.Header, _ io.Reader) error {
		out = append(out, Entry{Layer: layer, Header: h})
		return nil
	})
	return out, err
}

// ReadFile returns the content of the file at path ("/bridge") in img's
// layers (the last layer holding it wins, as in a container).
func ReadFile(img v1.Image, path string) ([]byte, error) {
	var data []byte
	found := false
	err := walkLayers(img, func(_ int, h *tar.Header, r io.Reader) error {
		if "/"+h.Name != path || h.Typeflag != tar.TypeReg {
			return nil
		}
		b, err := io.ReadAll(r)
		data, found = b, true
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s: no such file in the image", path)
	}
	return data, nil
}

func walkLayers(img v1.Image, fn func(layer int, h *tar.Header, r io.Reader) error) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err == nil {
				err = fn(i, h, tr)
			}
			if err != nil {
				_ = rc.Close() // the layer's error is the one to report
				return fmt.Errorf("layer %d: %w", i, err)
			}
		}
		if err := rc.Close(); err != nil {
			return err
		}
	}
	return nil
}

package image

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// WriteArchive writes the layout at dir as one tarball that both kinds of
// loader accept:
//   - the layout itself (oci-layout, index.json, blobs/), which podman load
//     and docker load with the containerd image store read, taking the
//     image of their own platform from the index;
//   - a manifest.json in the docker save format pointing into blobs/, which
//     docker load with the classic image store reads. That format holds
//     one image per name: it names the index's first image (linux/amd64 in
//     the Makefile's order), as docker save does for one platform.
//
// Entries are sorted and carry modTime and no owner, so the same layout
// gives the same bytes.
func WriteArchive(tarPath, dir string, modTime time.Time) error {
	l, err := OpenLayout(dir)
	if err != nil {
		return err
	}
	legacy, err := dockerManifest(l)
	if err != nil {
		return err
	}
	f, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = writeTree(tw, dir, modTime)
	if err == nil {
		err = writeEntry(tw, "manifest.json", legacy, modTime)
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tarPath) // a partial archive; the write's error is the one to report
		return fmt.Errorf("image archive %s: %w", tarPath, err)
	}
	return nil
}

// dockerManifest is docker save's manifest.json for the first image.
func dockerManifest(l *Layout) ([]byte, error) {
	_, images, err := Platforms(l.Index)
	if err != nil {
		return nil, err
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("the index holds no image")
	}
	img := images[0]
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: blobPath(cfg.Hex), RepoTags: []string{l.Ref}}
	for _, layer := range layers {
		d, err := layer.Digest()
		if err != nil {
			return nil, err
		}
		entry.Layers = append(entry.Layers, blobPath(d.Hex))
	}
	return json.Marshal([]any{entry})
}

func blobPath(hex string) string { return path.Join("blobs", "sha256", hex) }

// writeTree adds every directory and file under dir, sorted by path.
func writeTree(tw *tar.Writer, dir string, modTime time.Time) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if fi.IsDir() {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: modTime.UTC(), Format: tar.FormatUSTAR}); err != nil {
				return err
			}
			continue
		}
		if err := copyEntry(tw, name, p, fi.Size(), modTime); err != nil {
			return err
		}
	}
	return nil
}

func copyEntry(tw *tar.Writer, name, file string, size int64, modTime time.Time) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: modTime.UTC(), Format: tar.FormatUSTAR})
	if err == nil {
		_, err = io.Copy(tw, f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeEntry(tw *tar.Writer, name string, data []byte, modTime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: modTime.UTC(), Format: tar.FormatUSTAR}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// Command image builds, and pushes, kubebridge's container image without a
// Docker engine (make image, make image-push). The work is in
// internal/image.
//
//	image build -bin DIR -platforms "linux/amd64 linux/arm64" -out bin/image -tar bin/image.tar \
//	      -ref ghcr.io/kubebridge/kubebridge:v1 -version v1 -revision SHA -created UNIXSECONDS
//	image push -layout bin/image -ref registry/name:tag
//
// build takes each platform's binaries from DIR/<os>/<arch>/ (make build
// with GOOS, GOARCH and BIN_DIR set puts them there).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubebridge/kubebridge/internal/image"
)

const usage = `usage:
  image build -bin DIR -platforms "os/arch ..." -out LAYOUT_DIR -tar FILE -ref NAME:TAG -version V -revision SHA [-source URL] -created UNIX_SECONDS
  image push -layout LAYOUT_DIR -ref REGISTRY/NAME:TAG`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(ctx, os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image: "+err.Error())
		os.Exit(1)
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	bin := fs.String("bin", "", "directory holding <os>/<arch>/<binary> for every platform")
	platformList := fs.String("platforms", "linux/amd64 linux/arm64", "platforms, space-separated")
	out := fs.String("out", "", "OCI image layout directory to write (must not exist or be empty)")
	tarPath := fs.String("tar", "", "tarball to write for docker load / podman load")
	ref := fs.String("ref", "", "image name and tag")
	version := fs.String("version", "", "org.opencontainers.image.version")
	revision := fs.String("revision", "", "org.opencontainers.image.revision")
	source := fs.String("source", image.SourceURL, "org.opencontainers.image.source")
	created := fs.String("created", "", "org.opencontainers.image.created, in Unix seconds (the commit time)")
	_ = fs.Parse(args)
	for flagName, v := range map[string]string{"bin": *bin, "out": *out, "tar": *tarPath, "ref": *ref, "created": *created} {
		if v == "" {
			return fmt.Errorf("build: -%s is required", flagName)
		}
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("build: -created %q: want Unix seconds", *created)
	}
	r, err := name.ParseReference(*ref)
	if err != nil {
		return fmt.Errorf("build: -ref %q: %w", *ref, err)
	}
	var platforms []v1.Platform
	for _, s := range strings.Fields(*platformList) {
		p, err := v1.ParsePlatform(s)
		if err != nil {
			return fmt.Errorf("build: platform %q: %w", s, err)
		}
		platforms = append(platforms, *p)
	}
	meta := image.Metadata{Version: *version, Revision: *revision, Source: *source, Created: time.Unix(secs, 0).UTC()}
	idx, err := image.Build(image.Kubebridge(), meta, platforms, func(p v1.Platform) string {
		return filepath.Join(*bin, p.OS, p.Architecture)
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if err := image.WriteLayout(*out, idx, r); err != nil {
		return err
	}
	if err := image.WriteArchive(*tarPath, *out, meta.Created); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n  layout  %s\n  tarball %s\n", r.Name(), digest, *out, *tarPath)
	return nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("layout", "", "OCI image layout written by image build")
	ref := fs.String("ref", "", "where to push, registry/name:tag")
	_ = fs.Parse(args)
	if *dir == "" || *ref == "" {
		return fmt.Errorf("push: -layout and -ref are required")
	}
	digest, err := image.Push(ctx, *dir, *ref)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", *ref, digest)
	return nil
}

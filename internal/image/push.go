package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads the index of the layout at dir to ref, with the
// credentials docker login leaves ($DOCKER_CONFIG/config.json or
// ~/.docker/config.json, credential helpers included). It pushes what was
// built and tested, not a new build, and returns the index's digest.
func Push(ctx context.Context, dir, ref string) (v1.Hash, error) {
	l, err := OpenLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	digest, err := l.Index.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(r, l.Index, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", r, err)
	}
	return digest, nil
}

// Package image builds kubebridge's container image without a Docker
// engine and reads it back: one scratch image per platform holding the
// static binaries, gathered in an OCI image index, written as an OCI image
// layout and as a tarball that docker load and podman load accept, and
// pushed to a registry with the credentials docker login leaves.
//
// What the image declares (files, user, entrypoint, ports) is Spec; the
// Dockerfile, the alternative for people with a Docker engine, declares
// the same, and a test compares the two. Builds are reproducible: the same
// binaries and Metadata give the same index digest.
//
// Tooling: hack/image (make image, make image-push) and the tests. It
// imports nothing of this module.
package image

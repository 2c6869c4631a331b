# syntax=docker/dockerfile:1
# The alternative to `make image` for people with a Docker engine:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(make -s version) --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(git log -1 --format=%cI) -t registry/kubebridge:tag .
#
# `make image` needs no Docker engine and gives the same image: the same
# files, user, entrypoint, port and labels (internal/image's tests compare
# this file with what it builds), built by the same `make build`.

ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS TARGETARCH
# The Makefile's build target is the single definition of how the binaries
# are built (static, -trimpath, version stamped through ldflags).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    make build VERSION=${VERSION} GOOS=${TARGETOS} GOARCH=${TARGETARCH}

# From nothing: two static binaries (the CA roots are compiled in), no
# shell, no package manager.
FROM scratch
COPY --from=build /src/bin/bridge /bridge
COPY --from=build /src/bin/kubebridge /kubebridge
USER 65532:65532
EXPOSE 8080
WORKDIR /
ENTRYPOINT ["/bridge"]
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.source=https://github.com/kubebridge/kubebridge \
      org.opencontainers.image.created=${CREATED}

# syntax=docker/dockerfile:1
# Build with: make image (or docker build --build-arg VERSION=$(git describe --always) -t kubebridge .)

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# The Makefile's build target is the single definition of how the binary
# is built (CGO_ENABLED=0, -trimpath, version stamped through ldflags).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    make build VERSION=${VERSION}

# distroless/static: CA certificates, tzdata, no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/bridge /bridge
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/bridge"]

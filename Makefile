# kubebridge — see README.md. `make help` lists the targets.

SHELL := /usr/bin/env bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The one build command; the Dockerfile's build stage runs the same line.
BUILD_FLAGS := -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
BIN := bin/bridge
IMAGE ?= ghcr.io/kubebridge/kubebridge:$(VERSION)
PKGS := ./...

# Tools run at pinned versions through `go run`: nothing to install.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.52.0
MODULE := github.com/kubebridge/kubebridge

.PHONY: help build image test test-unit kube-bins lint run bench fuzz clean demo demo-up

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/bridge and bin/kubebridge (the CLI)
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN) ./cmd/bridge
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o bin/kubebridge ./cmd/kubebridge

image: ## Build the container image (needs a Docker engine)
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine reachable here; build the image where one runs (see README, Deploy)"; exit 1; }
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

kube-bins: ## Build (or reuse) kube-apiserver, etcd and etcdctl for the end-to-end tests
	@bash hack/build-kube-bins.sh >/dev/null

# make test: everything, with the race detector; the real control plane is
# required (a missing binary fails instead of skipping).
test: ## Run unit, integration and end-to-end tests (builds the control plane once, ~10 min cold)
	@bins=$$(bash hack/build-kube-bins.sh) && \
	  echo "control-plane binaries: $$bins" && \
	  KUBEBRIDGE_KUBE_BINS=$$bins KUBEBRIDGE_REQUIRE_E2E=1 $(GO) test -race -count=1 -timeout 30m $(PKGS)

test-unit: ## Fast tests only (no control plane; end-to-end tests skip)
	$(GO) test -race -short -count=1 $(PKGS)

lint: ## gofmt, goimports (standard library, third-party, this module), go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) run $(GOIMPORTS) -local $(MODULE) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "goimports -local $(MODULE) would change:"; echo "$$out"; exit 1; fi
	@$(GO) run ./hack/importgroups -local $(MODULE) $$(git ls-files '*.go')
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

run: build ## Run the bridge against the current kubeconfig (embedded NATS unless NATS_URL is set)
	BRIDGE_RESOURCES="$${BRIDGE_RESOURCES:-configmaps; deployments.apps}" ./$(BIN)

bench: ## Benchmarks (numbers go to docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./pkg/encode ./internal/bridge

fuzz: ## Fuzz subject escaping for a minute
	$(GO) test -run '^$$' -fuzz FuzzEscapeToken -fuzztime 60s ./pkg/encode

clean: ## Remove build output (not the control-plane cache)
	rm -rf bin

# make demo / demo-up: a throw-away etcd + kube-apiserver (built once by
# hack/build-kube-bins.sh, whose progress shows here), bin/bridge with its
# embedded NATS, and a consumer printing the events (hack/demo).
demo: build ## Show the bridge at work on a throw-away control plane: snapshot, added, updated, deleted (first run builds the control plane, ~10 min)
	@bins=$$(bash hack/build-kube-bins.sh) && \
	  $(GO) build -o bin/demo ./hack/demo && \
	  export KUBEBRIDGE_KUBE_BINS=$$bins && exec ./bin/demo -bridge ./$(BIN)

demo-up: build ## Like demo, but keep the control plane and the bridge running until Ctrl-C and print how to attach
	@bins=$$(bash hack/build-kube-bins.sh) && \
	  $(GO) build -o bin/demo ./hack/demo && \
	  export KUBEBRIDGE_KUBE_BINS=$$bins && exec ./bin/demo -up -bridge ./$(BIN)

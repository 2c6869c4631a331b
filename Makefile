# kubebridge — see README.md. `make help` lists the targets.

SHELL := /usr/bin/env bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The one build command; `make image` and the Dockerfile's build stage run
# it too. GOOS and GOARCH (empty: this machine's) pick the platform,
# BIN_DIR where the binaries go.
BUILD_FLAGS := -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
BIN_DIR ?= bin
BIN := $(BIN_DIR)/bridge
PKGS := ./...

# The image: what `make image` builds and `make image-push` pushes.
IMAGE ?= ghcr.io/kubebridge/kubebridge:$(VERSION)
PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR ?= bin/image
IMAGE_TAR ?= bin/image.tar
# Per-platform binaries, <os>/<arch>/ under this directory.
IMAGE_BIN_DIR ?= bin/platforms
# The annotations: the commit and its time, so two builds of one commit are
# the same image (SOURCE_DATE_EPOCH, as reproducible builds name it).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

# Tools run at pinned versions through `go run`, outside go.mod: nothing
# to install. .golangci.yml says what golangci-lint checks.
GOLANGCI_LINT := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: help build image image-push version test test-unit robustness kube-bins lint run bench fuzz clean demo demo-up

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/bridge and bin/kubebridge (the CLI), static
	CGO_ENABLED=0 GOOS=$(GOOS) GOARCH=$(GOARCH) $(GO) build $(BUILD_FLAGS) -o $(BIN_DIR)/bridge ./cmd/bridge
	CGO_ENABLED=0 GOOS=$(GOOS) GOARCH=$(GOARCH) $(GO) build $(BUILD_FLAGS) -o $(BIN_DIR)/kubebridge ./cmd/kubebridge

version: ## Print the version make build stamps
	@echo $(VERSION)

image: ## Build the image for $(PLATFORMS), no Docker engine needed: OCI layout in bin/image, bin/image.tar for docker/podman load
	@set -e; for p in $(PLATFORMS); do \
	  $(MAKE) --no-print-directory build GOOS=$${p%%/*} GOARCH=$${p##*/} BIN_DIR=$(IMAGE_BIN_DIR)/$$p; \
	done
	$(GO) run ./hack/image build -bin $(IMAGE_BIN_DIR) -platforms "$(PLATFORMS)" -out $(IMAGE_DIR) -tar $(IMAGE_TAR) \
	  -ref $(IMAGE) -version $(VERSION) -revision $(REVISION) -created $(SOURCE_DATE_EPOCH)

image-push: ## Push the index make image built to IMAGE=registry/name:tag, with the credentials of docker login
	@test -f $(IMAGE_DIR)/index.json || { echo "make image-push: no image in $(IMAGE_DIR); run make image first"; exit 1; }
	$(GO) run ./hack/image push -layout $(IMAGE_DIR) -ref $(IMAGE)

kube-bins: ## Build (or reuse) kube-apiserver, etcd and etcdctl for the end-to-end tests
	@bash hack/build-kube-bins.sh >/dev/null

# make test: everything, with the race detector; the real control plane is
# required (a missing binary fails instead of skipping). go test builds and
# starts packages in the order given: the longest (test/e2e, then
# pkg/consume) go first, so that the others are built and run beside them
# instead of before them.
TEST_FIRST := $(if $(filter ./...,$(PKGS)),./test/e2e ./pkg/consume)
test: ## Run unit, integration and end-to-end tests, and the monitoring rules' (builds the control plane once, ~10 min cold)
	@set -e; bins=$$(bash hack/build-kube-bins.sh); \
	  echo "control-plane binaries: $$bins"; \
	  export KUBEBRIDGE_KUBE_BINS=$$bins KUBEBRIDGE_REQUIRE_E2E=1; \
	  mon=$$(mktemp); \
	  (cd deploy/monitoring && $(GO) test -count=1 -timeout 15m ./... >$$mon 2>&1; echo $$? >>$$mon) & \
	  set +e; $(GO) test -race -count=1 -timeout 30m $(TEST_FIRST) $(PKGS); main=$$?; wait; \
	  echo "== deploy/monitoring (a module of its own, run beside the main one):"; head -n -1 $$mon; \
	  monrc=$$(tail -n 1 $$mon); rm -f $$mon; test $$main = 0 && test $$monrc = 0

# make robustness: TestRobustness (test/e2e/robustness_test.go), the
# bridge under a seeded random schedule of faults, every message checked
# against the recorded history. DURATION is the schedule's length, SEED
# its seed (empty: from the clock; the test logs it). The go test timeout
# is the schedule plus 20 minutes for setting up and checking. The report
# goes to REPORT (default: a directory under $TMPDIR the test names).
DURATION ?= 5m
SEED ?=
REPORT ?=
robustness: ## The bridge under random faults, every message checked against the history (DURATION=5m, SEED=; docs/robustness.md)
	@set -e; bins=$$(bash hack/build-kube-bins.sh); \
	  secs=$$(echo '$(DURATION)' | sed -E 's/^([0-9]+)h$$/\1*3600/; s/^([0-9]+)m$$/\1*60/; s/^([0-9]+)s$$/\1/'); \
	  case "$$secs" in ''|*[!0-9*]*) echo "make robustness: DURATION=$(DURATION): want e.g. 90s, 5m or 1h"; exit 2;; esac; \
	  KUBEBRIDGE_KUBE_BINS=$$bins KUBEBRIDGE_REQUIRE_E2E=1 \
	  KUBEBRIDGE_ROBUSTNESS_DURATION=$(DURATION) KUBEBRIDGE_ROBUSTNESS_SEED=$(SEED) KUBEBRIDGE_ROBUSTNESS_REPORT=$(REPORT) \
	  $(GO) test -count=1 -v -timeout $$(( $$secs + 1200 ))s -run '^TestRobustness$$' ./test/e2e

test-unit: ## Fast tests only (no control plane; end-to-end tests skip)
	$(GO) test -race -short -count=1 $(PKGS)

# make lint: golangci-lint with .golangci.yml. `fmt --diff` checks every
# .go file, whatever its build tags or module; `run` lints the packages
# of this module and of deploy/monitoring, a module of its own.
lint: ## golangci-lint: gofmt, import groups (standard library, third-party, this module), go vet, staticcheck, errcheck, gocyclo
	@echo "golangci-lint fmt --diff \$$(git ls-files '*.go')"
	@$(GO) run $(GOLANGCI_LINT) fmt --diff $$(git ls-files '*.go')
	$(GO) run $(GOLANGCI_LINT) run $(PKGS)
	cd deploy/monitoring && $(GO) run $(GOLANGCI_LINT) run ./...

run: build ## Run the bridge against the current kubeconfig (embedded NATS unless NATS_URL is set)
	BRIDGE_RESOURCES="$${BRIDGE_RESOURCES:-configmaps; deployments.apps}" ./$(BIN)

bench: ## Benchmarks (numbers go to docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./pkg/encode ./internal/intake ./internal/bridge

fuzz: ## Fuzz subject escaping for a minute
	$(GO) test -run '^$$' -fuzz FuzzEscapeToken -fuzztime 60s ./pkg/contract

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

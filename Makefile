# schedd — run `make` or `make help` for the targets.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := bin
DEMO_DIR    := .demo
DEMO_CONFIG := examples/demo.yaml
DEMO_SOCKET := $(CURDIR)/$(DEMO_DIR)/schedd.sock

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build bin/schedd and the example gateway
	@echo "building bin/schedd and bin/example-gateway (the first build downloads and compiles the modules: a couple of minutes)"
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/schedd ./cmd/schedd
	@CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/example-gateway ./examples/gateway
	@echo "built bin/schedd ($$($(BIN)/schedd version)) and bin/example-gateway"

.PHONY: test
test: ## Run every test with the race detector (the CI test command)
	$(GO) test -race -count=1 ./...

.PHONY: test-short
test-short: ## Run the fast tests only (no real-process end-to-end runs)
	$(GO) test -short -count=1 ./...

.PHONY: vet
vet: ## go vet, for this platform and for darwin and windows
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...

.PHONY: staticcheck
staticcheck: ## Run staticcheck (pinned version, fetched through the module proxy)
	$(GO) run $(STATICCHECK) ./...

.PHONY: fmt-check
fmt-check: ## Fail if any file is not gofmt'd
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: fmt
fmt: ## gofmt every file
	gofmt -w $$(git ls-files '*.go')

.PHONY: tidy-check
tidy-check: ## Fail if go.mod/go.sum are not tidy
	$(GO) mod tidy -diff

.PHONY: cross
cross: ## Build for darwin and windows (and linux/arm64)
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./...
	GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./...
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./...
	GOOS=linux GOARCH=arm64 $(GO) build -o /dev/null ./...

# Each target runs for FUZZTIME; a new input that widens coverage is minimized for at most
# FUZZMINIMIZETIME (go's default, 60s, would spend a short run minimizing).
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 1m)
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-1m} \
	      -fuzzminimizetime $${FUZZMINIMIZETIME:-5s} $$pkg || exit 1; \
	  done; \
	done

.PHONY: bench
bench: build ## Run the benchmarks of bench/ (see bench/README.md)
	bash bench/run.sh

.PHONY: verify-units
verify-units: ## Check the unit (systemd-analyze verify, no output allowed), the plists and the task XML
	GO=$(GO) bash packaging/verify-units.sh

.PHONY: package
package: ## Build the .deb and .rpm into dist/ with nfpm (PKG_ARCH, PKG_VERSION), then check them
	GO=$(GO) VERSION=$(VERSION) bash packaging/build.sh
	bash packaging/check-packages.sh

.PHONY: ci
ci: fmt-check vet staticcheck tidy-check test cross verify-units ## Everything CI checks

.PHONY: demo
demo: build ## Supervise the example gateway, with heartbeats, a delivery and a cron job (^C stops)
	@echo "schedd supervises bin/example-gateway on http://127.0.0.1:8089 ($(DEMO_CONFIG)):"
	@echo "a heartbeat every 10s, a cron job every 30s, and one delivery once the daemon answers."
	@echo "In another terminal:"
	@echo "  export SCHEDD_SOCKET=$(DEMO_SOCKET); bin/schedd status"
	@echo "  bin/schedd logs -f          # the gateway's output; bin/schedd cron list, bin/schedd tasks list"
	@# The delivery is enqueued once the control socket answers (at most 10 s from now).
	@(for i in $$(seq 100); do \
	  if $(BIN)/schedd status --socket $(DEMO_SOCKET) >/dev/null 2>&1; then \
	    exec $(BIN)/schedd deliveries enqueue --socket $(DEMO_SOCKET) --sink demo --data 'hello from make demo'; \
	  fi; sleep 0.1; done) &
	$(BIN)/schedd run --config $(DEMO_CONFIG)

.PHONY: clean
clean: ## Remove build output and demo state
	rm -rf $(BIN) $(DEMO_DIR) dist

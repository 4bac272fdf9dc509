GO ?= go
# Packages with concurrency run under the race detector; everything runs with a deadline.
# `make model-full` checks the larger authority scopes (docs/verification.md).
TEST_TIMEOUT ?= 9m

.PHONY: test demo build vet bench model-full

model-full:
	CUTOVER_MODEL_FULL=1 $(GO) test -count=1 -timeout 20m -run 'TestExploreAuthority' -v ./kvrouting/model

# The model checks (kvrouting/model) are pure computation with no
# goroutines: they run without the race detector, which would only slow
# their millions of states down several times.
test: vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/kvrouting/model$$')
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./kvrouting/model
	$(MAKE) --no-print-directory fuzz FUZZTIME=3000x

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/cutover ./cmd/cutover

demo:
	$(GO) run ./cmd/cutover demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./kvrouting/...
	$(GO) run ./cmd/cutover bench routing --json

# fuzz runs every fuzz target for FUZZTIME each (go test -fuzz takes one
# target per run). Their committed seed corpora (testdata/fuzz/) already run
# as ordinary tests in `make test`.
FUZZTIME ?= 20s
FUZZ_TARGETS = \
	./kvrouting:FuzzDecodeDocument \
	./events:FuzzDecode \
	./events:FuzzDecodeCommand \
	./events:FuzzDecodeEvent \
	./services/contractnats:FuzzDecode \
	./services/contractnats:FuzzDecodePage \
	./services/contractnats:FuzzDecodeExportRequest \
	./services/contractnats:FuzzDecodePageRef \
	./services/contractnats:FuzzRecordCodec \
	./app/api:FuzzHandlers

.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# cluster-test runs the multi-process topology (3 `cutover nats` nodes in an
# R3 JetStream cluster, gateway, 2 orchestrators, projector) from one build
# of the binary, migrating a tenant under traffic while a NATS node and an
# orchestrator are killed (cmd/cutover/cluster_test.go; issue 8), and its
# supercluster variant: one `cutover nats` process per region, gateways
# configured by flags through WAN-shaping proxies (rtt 40 ms), ROUTING in the
# home region with a mirror in the other, a region cut off and healed, then
# a conversation migrated across the gateway by a separate gateway and
# orchestrator (--placement, --region-nats; cmd/cutover/supercluster_test.go;
# issue 16).
.PHONY: cluster-test
cluster-test:
	$(GO) build -o bin/cutover ./cmd/cutover
	CUTOVER_CLUSTER_TEST=1 CUTOVER_BIN=$(CURDIR)/bin/cutover $(GO) test -race -count=1 -timeout 8m -run '^(TestClusterTopology|TestSuperclusterProcesses)$$' -v ./cmd/cutover

# chaos runs `cutover chaos` for CHAOS_DURATION with seed CHAOS_SEED: a
# 3-node cluster under a seeded nemesis (leader kills, worker kills and
# pauses, partitions, stale routing, duplicate starts), then the invariant
# check (docs/chaos.md). `make test` runs a 20 s version (TestChaosShort).
CHAOS_DURATION ?= 2m
CHAOS_SEED ?= 1
.PHONY: chaos
chaos:
	$(GO) run ./cmd/cutover chaos --duration $(CHAOS_DURATION) --seed $(CHAOS_SEED)

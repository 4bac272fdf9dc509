GO ?= go
# Packages with concurrency run under the race detector; everything runs with a deadline.
TEST_TIMEOUT ?= 9m

.PHONY: test demo build vet bench

test: vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=2s

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
	./services/api:FuzzHandlers

.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

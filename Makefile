GO ?= go
# Packages with concurrency run under the race detector; everything runs with a deadline.
TEST_TIMEOUT ?= 9m

.PHONY: test demo build vet bench

test: vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

vet:
	$(GO) vet ./...

build:
	$(GO) build -o bin/cutover ./cmd/cutover

demo:
	$(GO) run ./cmd/cutover demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./kvrouting/...
	$(GO) run ./cmd/cutover bench routing --json

# Execledger. The two commands: `make run` and `make test`.
GO       ?= go
BIN      := bin/execledger
PKGS     := ./...
# Tests need a PostgreSQL server: TEST_DATABASE_URL, else 127.0.0.1:5432.
TEST_FLAGS ?= -race -count=1 -timeout 14m

.PHONY: run test lint vet cross build skills bench chaos schema deps clean

## run: build, start an embedded PostgreSQL (unless DATABASE_URL is set), migrate, serve the demo
run: build
	bash scripts/ensure-postgres.sh
	./$(BIN) dev

## test: install and start what the tests need, then run every test, and again those of
## internal/bench whose River half is linked only with -tags river (River, river-audited)
RIVER_TESTS := ^(TestRun|TestRiverAudited|TestConfigValidate)$$
test: deps lint
	$(GO) test $(TEST_FLAGS) $(PKGS)
	$(GO) test $(TEST_FLAGS) -tags river -run '$(RIVER_TESTS)' ./internal/bench/

build:
	$(GO) build -o $(BIN) ./cmd/execledger

## skills: build each Go skill testdata/skills/<name> into testdata/skills/<name>.wasm
## (the tests build what they use themselves)
SKILLS := $(patsubst %/,%,$(dir $(wildcard testdata/skills/*/main.go)))
skills:
	@for d in $(SKILLS); do \
		echo "GOOS=wasip1 GOARCH=wasm $(GO) build -o $$d.wasm ./$$d"; \
		GOOS=wasip1 GOARCH=wasm $(GO) build -o $$d.wasm ./$$d || exit 1; \
	done

deps:
	bash scripts/ensure-test-deps.sh

## lint: formatting, go vet, and the macOS and Windows builds
lint: vet cross
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags river ./internal/bench/ ./cmd/execledger/

## cross: build and vet for macOS and Windows, whose process.run runs tier C under
## sandbox-exec and a job object (docs/process-sandbox.md); their runners are
## compiled, not run, here
CROSS := darwin/arm64 windows/amd64
cross:
	@for p in $(CROSS); do \
		echo "GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build/vet $(PKGS)"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(PKGS) || exit 1; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS) || exit 1; \
	done

## bench: the benchmarks of docs/benchmarks.md (minutes; not part of make test); the binary
## is built with -tags river, the River baseline being linked only then
bench: deps
	$(GO) build -tags river -o $(BIN) ./cmd/execledger
	$(GO) test -run '^$$' -bench . -benchtime 1s -timeout 60m ./ledger/ -rounds 10 | tee bench.out
	$(GO) run golang.org/x/perf/cmd/benchstat@latest -ignore /round bench.out
	DATABASE_URL="$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}" ./$(BIN) bench --system all --mode burndown --n 20000
	DATABASE_URL="$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}" ./$(BIN) bench --system all --mode continuous --duration 20s
	$(GO) test -count=1 -run '^TestSpawnCost$$' -v ./internal/sandbox/processrun/ -spawn.rounds 9 -spawn.self "$$PWD/$(BIN)"
	$(GO) test -run '^$$' -bench 'TrivialSkill|RawWazero' -count 6 -benchtime 20000x ./internal/sandbox/wasmrun/
	$(GO) test -run '^$$' -bench 'CPUHeavy' -count 3 -benchtime 10x ./internal/sandbox/wasmrun/
	$(GO) test -run '^$$' -bench 'Pages' -benchtime 200x -timeout 60m ./internal/console/

## chaos: the chaos scenarios at full size (kill -9 an executor mid-load, restart PostgreSQL
## under load, two executor processes, fail over from a killed primary to its synchronous
## standby); make test runs them small
chaos: deps
	$(GO) test -count=1 -timeout 30m -run Chaos -v ./executor/ -chaos.full

## schema: rewrite docs/schema.sql from a freshly migrated database
schema: deps
	$(GO) test -count=1 -run TestSchemaDumpIsCurrent ./migrations/ -update

clean:
	rm -rf bin bench.out testdata/skills/*.wasm

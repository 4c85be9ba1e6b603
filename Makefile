# denorm: build, test and demo. `make help` lists the targets.
#
# Tests that need servers read DENORM_TEST_PG and DENORM_TEST_MONGO, which
# scripts/testenv.sh sets for the command it runs (throwaway PostgreSQL + FerretDB).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(PATH):/usr/local/go/bin

GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 50m
PKGS      ?= ./...
BENCH     ?= .

TESTSERVER_SRC := $(filter-out %_test.go,$(wildcard tools/testserver/*.go)) tools/testserver/go.mod tools/testserver/go.sum

# What `denorm version` prints (scripts/release.sh stamps release builds the same way).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
STAMP   := VERSION='$(VERSION)' COMMIT='$(COMMIT)' DATE='$(DATE)'

.PHONY: all help build tools deps demo-deps test test-long test-poison test-tools test-short fuzz crash demo bench bench-chart bench-micro screenshots lint clean release image check-image man

all: build

help:
	@echo "make build       build bin/denorm"
	@echo "make tools       build bin/testserver (embedded FerretDB, dump, ping)"
	@echo "make deps        install what the tests need if missing: PostgreSQL, Chromium, groff (root, apt), then tools"
	@echo "make demo-deps   install only what make demo needs if missing: PostgreSQL (root, apt), then tools"
	@echo "make test        all tests against throwaway PostgreSQL + FerretDB (TESTFLAGS='$(TESTFLAGS)'), the fuzzer for DIFFTEST_TIME=$(DIFFTEST_TIME); about 10 minutes on 2 cores"
	@echo "make test-long   make test with the long randomized rounds at full length (DENORM_TEST_LONG=1) and the fuzzer for LONG_DIFFTEST_TIME=$(LONG_DIFFTEST_TIME)"
	@echo "make test-poison the quick packages and migrate on the examples and Pagila with reused memory poisoned (-tags denorm_poison)"
	@echo "make crash       sync killed at every crash point, both methods, for CRASHTIME (default 30m); SEED=N replays one seed"
	@echo "make test-tools  tests of tools/testserver (in-process FerretDB)"
	@echo "make test-short  go test -short, no servers"
	@echo "make fuzz        the differential fuzzer for FUZZTIME (default 30m); SEED=N replays one case"
	@echo "make demo        migrate testdata/examples/seed.sql with the person mapping and print the documents"
	@echo "make bench       side-by-side benchmark (bench/results.json); SCALE=N persons"
	@echo "make bench-chart docs/images/bench.svg from bench/results.json, without running the benchmark"
	@echo "make screenshots docs/images/model.png: the model diagram of docs/images/model.yaml on the examples' database"
	@echo "make bench-micro Go micro-benchmarks"
	@echo "make lint        gofmt check and go vet"
	@echo "make release     static binaries for linux and darwin (amd64, arm64), man pages, OCI image, SHA256SUMS in dist/"
	@echo "make image       the OCI image of the linux binaries: dist/denorm-image.tar (no Docker needed), then checks it"
	@echo "make man         man pages from the command definitions into man/"
	@echo "make clean       remove bin/, dist/ and man/"

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/denorm ./cmd/denorm

tools: bin/testserver

# Its own module: FerretDB's dependencies stay out of denorm's go.mod.
bin/testserver: $(TESTSERVER_SRC)
	cd tools/testserver && GOWORK=off $(GO) build -o ../../bin/testserver .

# System packages the tests need (PostgreSQL, Chromium, groff), then the test server.
deps:
	scripts/deps.sh
	$(MAKE) tools

# What the demo needs: the PostgreSQL server binaries (installed only when
# missing, which needs root) and the test server. Not Chromium (290 MB) nor
# groff, which only tests use: without root, with PostgreSQL present, the
# demo runs whatever else is missing (TestMakeDemoDeps).
demo-deps:
	scripts/pg.sh install
	$(MAKE) tools

# The differential fuzzer (cmd/denorm TestDifftest) runs inside `make test`
# for DIFFTEST_TIME of random cases (docs/development.md, "Differential fuzzing"), side
# by side with the package's other parallel tests; `make test-long` runs it
# for LONG_DIFFTEST_TIME, `make fuzz` as long as asked.
# One minute in make test keeps it under 10 minutes on 2 cores (it was 3
# minutes, run alone after the other tests).
DIFFTEST_TIME      ?= 1m
LONG_DIFFTEST_TIME ?= 10m
export DENORM_DIFFTEST_TIME = $(DIFFTEST_TIME)

# The crash-point test (cmd/denorm TestSyncCrashPoints: sync killed at
# every commit point of a pass, docs/development.md, "Crash points") runs inside
# `make test` for CRASH_TIME (two seeds at least, one per method), and
# `make crash` as long as asked: CRASHTIME=2h make crash; SEED=N replays
# one seed.
CRASH_TIME ?= 60s
CRASHTIME  ?= 30m
export DENORM_CRASH_TIME = $(CRASH_TIME)

test: deps build test-tools
	scripts/testenv.sh $(GO) test $(TESTFLAGS) $(PKGS)

# make test with DENORM_TEST_LONG=1: the tests that `make test` shortens
# (they say so in their log, testenv.Count) run at full length.
test-long: deps build test-tools
	DENORM_TEST_LONG=1 DENORM_DIFFTEST_TIME=$(LONG_DIFFTEST_TIME) scripts/testenv.sh $(GO) test $(TESTFLAGS) $(PKGS)

# Reused memory poisoned (internal/poison): the quick packages (pipeline
# and sync among them), then the cmd/denorm tests that migrate the
# examples and Pagila, built with
# -tags denorm_poison, under which a slab, read buffer or sort buffer taken
# back for reuse is overwritten with garbage and never handed out again: a
# document kept past its batch fails loudly. TESTENV= runs them against the
# servers DENORM_TEST_PG and DENORM_TEST_MONGO already name.
TESTENV     ?= scripts/testenv.sh
POISON_PKGS ?= ./internal/... ./mappings/... ./transform/... ./load ./extract ./job ./pipeline/...
test-poison: tools
	$(TESTENV) bash -c '$(GO) test -count=1 -timeout 30m -tags denorm_poison $(POISON_PKGS) && \
		$(GO) test -count=1 -timeout 30m -tags denorm_poison -run "^(TestExamplesGolden|TestPagila)$$" ./cmd/denorm'

# The differential fuzzer alone, as long as asked: FUZZTIME=2h make fuzz;
# SEED=N replays the one case of that seed, MASTER=N a whole run,
# OPEN=class,... draws closed classes too, CLOSE=class,... leaves classes
# out. Failures are shrunk into
# testdata/difftest/seed-N/.
FUZZTIME ?= 30m
fuzz: deps
	DENORM_DIFFTEST_TIME=$(FUZZTIME) DENORM_DIFFTEST_SEED=$(SEED) DENORM_DIFFTEST_MASTER=$(MASTER) \
	DENORM_DIFFTEST_OPEN=$(OPEN) DENORM_DIFFTEST_CLOSE=$(CLOSE) DENORM_DIFFTEST_KEEP=1 \
	scripts/testenv.sh $(GO) test -count=1 -timeout 0 -v -run '^TestDifftest$$' ./cmd/denorm

crash: deps build
	DENORM_CRASH_TIME=$(CRASHTIME) DENORM_TEST_SEED=$(SEED) \
	scripts/testenv.sh $(GO) test -count=1 -timeout 0 -v -run '^TestSyncCrashPoints$$' ./cmd/denorm

# The tools' own tests: the test server (an in-process FerretDB) and the
# image builder (builds a release binary and its image, reads the tarball back
# and runs the binary from it). No external servers, no Docker.
test-tools:
	cd tools/testserver && GOWORK=off $(GO) test -count=1 ./...
	cd tools/ociimage && GOWORK=off $(GO) test -count=1 ./...

test-short:
	$(GO) test -short $(PKGS)

demo: demo-deps build
	scripts/testenv.sh scripts/demo.sh

# The side-by-side benchmark (bench/main.go): SCALE=, TARGET_SCALE=, REPS=, POSTS=,
# COMMENTS_PER_POST=, SKIP_F=1, SKIP_BLOG=1 tune it. Writes bench/results.json.
# The sync benchmarks (bench/sync.go) run last: SKIP_SYNC=1 skips them, SYNC_ONLY=1
# runs only them (into bench/results-sync.json); SYNC_DIFF_SCALE=, SYNC_RATES=,
# SYNC_FOLLOW_PERSONS=, SYNC_FOLLOW_SECONDS= tune them. The sync ceiling (bench/ceiling.go)
# runs first among them: SKIP_SYNC_CEILING=1 skips it, SYNC_CEILING_CUSTOMERS=,
# SYNC_CEILING_SECONDS=, SYNC_CEILING_START=, SYNC_CEILING_MAX= tune it.
# The typed benchmark (bench/typed.go) runs before them: SKIP_TYPED=1 skips it,
# TYPED_ONLY=1 runs only it (into the typed key of bench/results.json); TYPED=
# parents per type family, TYPED_WIDE= orders with numeric: double, TYPED_SAMPLE=,
# TYPED_FAMILIES= (a regular expression) tune it; TYPED_BASELINE=BIN runs another
# denorm binary beside A in every round (before and after a change).
bench: deps build
	scripts/testenv.sh $(GO) run ./bench

# The benchmark chart (docs/images/bench.svg) from the committed bench/results.json,
# without running the benchmark (make bench writes it too).
bench-chart:
	$(GO) run ./bench -chart-only

# The README's picture of the document model (scripts/screenshot.sh): plan --format html
# of docs/images/model.yaml on testdata/examples/seed.sql, photographed by headless Chromium.
screenshots: deps build
	scripts/testenv.sh scripts/screenshot.sh

# Go micro-benchmarks of single stages.
bench-micro: deps build
	scripts/testenv.sh $(GO) test -run '^$$' -bench '$(BENCH)' $(PKGS)

# Release builds (scripts/release.sh): reproducible, static, stamped binaries;
# VERSION=v1.2.3 overrides git describe.
release:
	$(STAMP) scripts/release.sh all
	$(MAKE) check-image

image:
	$(STAMP) scripts/release.sh image
	$(MAKE) check-image

# TestImage on the image just built: every platform's config and filesystem,
# and this machine's binary taken from it and run.
check-image:
	cd tools/ociimage && GOWORK=off $(GO) test -count=1 -run '^TestImage$$' . -args -image $(CURDIR)/dist/denorm-image.tar

man: build
	rm -rf man
	bin/denorm man man

lint:
	@out="$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))"; \
	if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd tools/testserver && GOWORK=off $(GO) vet ./...
	cd tools/ociimage && GOWORK=off $(GO) vet ./...

clean:
	rm -rf bin/ dist/ man/

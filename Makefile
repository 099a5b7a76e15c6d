# fdl — make help lists the targets.
GO      ?= go
BIN     ?= bin/fdl
GOLANGCI_VERSION ?= v2.15.0
# bash for pipefail: make test fails when go test does, not only when its last pipe does.
SHELL   := bash

.PHONY: help build pyenv test soak fuzz demo bench lint docs clean longfuncs

help: ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

# A release build: no symbol table or DWARF (-s -w) and no build machine's
# paths in the binary (-trimpath); README.md gives its size and build time.
build: ## build bin/fdl, stripped (-trimpath, -s -w)
	$(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/fdl

pyenv: ## install the real DuckDB from PyPI into .venv: 1.5.5 (+ ducklake, sqlite, httpfs, aws, azure), 1.3.2, 1.4.4 and 1.5.1 (+ ducklake, sqlite), 2.0.0
	./scripts/pyenv.sh >/dev/null

# -timeout is per test binary: cmd/fdl, the longest, took 13 minutes (794 s)
# of a 13:37 make test on a quiet 2-core machine (3 December 2026; 9 of a
# 9:11 one that evening) and reached 40 on a heavily shared one; CI allows 90 for everything. A
# parallel test's time in the slowest list runs from its start to its end,
# so it includes the time its subtests waited for a free slot.
# The events go to bin/test.json (for a closer look: go run
# ./internal/cmd/slowest -quiet -n 30 < bin/test.json) and through
# internal/cmd/slowest, which prints what go test prints and, at the end,
# the ten slowest tests and the packages' wall times. -vet=off: go vet
# ./... has just run every check that go test's own vet step would.
# TMPDIR is a folder of this run's own from scripts/test-tmpdir.sh (in RAM
# where the machine has room: the suite's many small files and fsyncs cost
# a disk-backed /tmp two minutes of a 12-minute run), removed at the end.
# -p: one package more than cores at once. With go test's default (one per
# core) cmd/fdl held one slot and every other package ran one after another
# in the other, ending 80 s after it (9:50); with one more they share the
# cores and the run took 9:11 (docs/performance.md).
test: pyenv ## run every test (needs ../shared/testdata for the real-catalog tests); ends with the ten slowest
	$(GO) vet ./...
	@mkdir -p bin
	$(GO) build -o bin/slowest ./internal/cmd/slowest
	set -o pipefail; tmp=$$(scripts/test-tmpdir.sh); trap 'rm -rf "$$tmp"' EXIT; \
	TMPDIR=$$tmp $(GO) test -vet=off -count=1 -p $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) + 1 )) -timeout 60m -json ./... | tee bin/test.json | bin/slowest

longfuncs: ## list the functions over 80 lines whose doc comment does not say why they are one piece
	$(GO) run ./internal/cmd/longfuncs

# make soak runs, for a scheduled job, what make test runs in a shorter
# form. FDL_ALL_STORES=1: on GCS and Azure (and for the push/gc races on
# S3) the whole matrix make test runs on the folder and S3 only
# (cmd/fdl/matrix_test.go says which parts and why). FDL_SOAK=1
# (internal/testutil.Soak): the long forms of the real-DuckDB matrices —
# every old writer's every catalog form, every corpus catalog's FreezeOnto
# chain, every SQLite-form revert and restore, a 32-version history for
# keep-last gc. The -run patterns name every test that reads them.
SOAK_TESTS = TestConcurrentPushes|TestGCPushRaceS3|TestScriptsGCS|TestScriptsAzure|TestGCSpellings|TestGCPrefixCharacters|TestKillMirrorAtEveryStep
SOAK_LONG_FORMS = TestMigrateOldWriters|TestFreezeOntoEqualsFreeze|TestRevertRealExtension|TestRestoreRealExtension|TestGCKeepLastFive

soak: pyenv ## the long races and forms, for a scheduled job: 20 rounds of 16 concurrent pushes per store, 50 push/gc races on S3, every script and case on GCS and Azure, the real-DuckDB matrices whole (needs the test servers, as .ci/run starts them)
	FDL_ALL_STORES=1 FDL_SOAK_ROUNDS=20 FDL_RACE_SOAK=50 $(GO) test -count=1 -timeout 120m -run '$(SOAK_TESTS)' ./cmd/fdl
	FDL_SOAK=1 $(GO) test -count=1 -timeout 90m -run '$(SOAK_LONG_FORMS)' ./internal/ducklake/... ./gc

# The fuzz targets, as package:name. FUZZPARALLEL is the number of fuzzing
# processes per target (1: the machine is shared; raise it on a CI runner).
# FUZZMINIMIZE bounds the minimizing of each new input: with Go's default
# (60s) a target on a loaded machine spent its whole FUZZTIME minimizing
# one input (FuzzHead: 2,158 executions in 60s, 462,169 with 5s).
FUZZTIME     ?= 30s
FUZZPARALLEL ?= 1
FUZZMINIMIZE ?= 5s
FUZZ_TARGETS = version:FuzzParseRecord version:FuzzParseDataset version:FuzzParseID \
	history:FuzzParsePack \
	refs:FuzzRefContent refs:FuzzHead refs:FuzzCheckShort refs:FuzzResolve refs:FuzzParseLogEntry \
	internal/store:FuzzCheckKey internal/store:FuzzRedactURL internal/store:FuzzOpen internal/store/cloud:FuzzBucketAndPrefix \
	retention:FuzzPlace retention:FuzzPlaceDir retention:FuzzParseDuration retention:FuzzRetentionFiles

fuzz: ## run each parser fuzz target for FUZZTIME (default 30s), one after the other; a crasher lands in its package's testdata/fuzz
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $$t"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) -parallel $(FUZZPARALLEL) ./$${t%%:*}; \
	done

demo: build pyenv ## the main job end to end: the real DuckDB CLI writes through the lines fdl prints
	./scripts/demo.sh

bench: build pyenv ## benchmarks: go test -bench, transfers (bench-e2e.sh) and the SQLite working catalog (bench-sqlite.sh) at 64 and 256 MiB, history at 10,000 versions, attach through the catalog cache on S3 at 20 ms (bench-attach.sh), each command's cost on a small catalog (bench-commands.sh)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	./scripts/bench-e2e.sh
	./scripts/bench-sqlite.sh
	./scripts/bench-history.sh
	./scripts/bench-attach.sh
	./scripts/bench-commands.sh

lint: ## golangci-lint (pinned version) and gofmt
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION) run ./...

docs: ## regenerate docs/cli/ from the cobra commands
	$(GO) test ./cmd/fdl -run TestGeneratedDocs -count=1 -args -update-docs

clean: ## remove build output and the DuckDB environments
	rm -rf bin .venv

# The two commands: `make run` and `make test`. Everything they need is
# found or installed by the scripts they call (see scripts/).
SHELL := /bin/bash
GO ?= go

.PHONY: run test e2e bench bench-ingest bench-indexes bench-replay bench-replay-floor bench-ui bench-hostile-page bench-hostile-parse fuzz generate vet build clean

run: ## Start PostgreSQL (found or private), the console, Dex and demo traffic.
	@scripts/run.sh

test: ## Every test: unit, integration (real PostgreSQL + NATS) and e2e.
	@scripts/test.sh

e2e: ## Only the end-to-end tests: console binary, PostgreSQL, nats-server processes, Dex, Chromium.
	@TEST_PKGS=./e2e/... scripts/test.sh

build:
	$(GO) build -o .data/bin/console ./cmd/console

vet:
	$(GO) vet ./...

generate: ## Regenerate templ components (commit the *_templ.go files).
	$(GO) tool templ generate

fuzz: ## Run the header-parser fuzz targets for 30 s each (also part of make test with FUZZ=1).
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./dlq
	$(GO) test -run '^$$' -fuzz '^FuzzParseHeaderBlock$$' -fuzztime 30s ./dlq

bench: bench-ingest bench-indexes bench-replay bench-replay-floor bench-ui bench-hostile-page bench-hostile-parse ## All benchmarks; results go to docs/BENCHMARKS.md.

bench-ingest: ## 100,000 dead letters of 1 KB through NATS into PostgreSQL.
	@scripts/bench.sh ingest

bench-indexes: ## What each index of dead_letters costs an insert, in PostgreSQL alone.
	@scripts/bench.sh indexes

bench-replay: ## 100,000 approved items replayed at unlimited rate, with the ledger.
	@scripts/bench.sh replay

bench-replay-floor: ## The same 100,000 items' durable rows only (no reads, no publish): the replay's floor on this machine.
	@scripts/bench.sh replay-floor

bench-ui: ## Triage screens' server time on 1,000,000 dead letters (BENCH_ROWS=10000000 for 10M).
	@scripts/bench.sh ui

bench-hostile-page: ## Bytes allocated to show one hostile dead letter's page (1 MB error and stack, 10,000 headers) and its downloads.
	@scripts/bench.sh hostile-page

bench-hostile-parse: ## Time to parse one dead letter of 4 MB of hostile header lines (distinct identity values, spellings, names), and to fingerprint a hostile stack.
	@scripts/bench.sh hostile-parse

clean:
	rm -rf .data/bin .data/log

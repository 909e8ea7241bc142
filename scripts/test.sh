#!/usr/bin/env bash
# make test: every test package, on real PostgreSQL (see postgres.sh) and
# in-process NATS servers. Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres.sh
# Tests may run with durability off: their databases are thrown away.
PG_FSYNC=off PG_SYNC_COMMIT=off ensure_postgres
trap stop_postgres EXIT
# The e2e tests sign in through Dex, built once from the pinned tools module.
scripts/dex.sh build
export DEX_BIN=$PWD/.data/bin/dex
go test -count=1 -timeout 30m "$@" ./...
if [ "${FUZZ:-0}" = 1 ]; then
	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 30s ./dlq
fi

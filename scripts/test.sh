#!/usr/bin/env bash
# make test: every test package, on real PostgreSQL (see postgres.sh),
# in-process NATS servers, and for e2e/ real nats-server processes, Dex and
# Chromium (see e2e.sh). TEST_PKGS narrows the packages (make e2e sets
# ./e2e/...); extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres.sh
. scripts/e2e.sh
pkgs=${TEST_PKGS:-./...}
# Tests may run with durability off: their databases are thrown away.
PG_FSYNC=off PG_SYNC_COMMIT=off ensure_postgres
trap stop_postgres EXIT
# The e2e tests sign in through Dex, run nats-server processes and drive
# Chromium: all found, built or installed once, here, when the packages
# include them (./... or ./e2e...); no other package uses any of the three,
# so TEST_PKGS=./dlq/ needs neither the builds nor Chromium.
case " $pkgs " in
*" ./... "* | *e2e*) ensure_e2e_tools ;;
esac
# With every package, the four longest go first (together nine tenths of
# the run): go test starts packages in the order given, two at a time on
# two cores, so the last long one does not run alone at the end.
run=$pkgs
if [ "$pkgs" = ./... ]; then
	first="./dlq/replay ./e2e ./web ./dlq"
	module=$(go list -m)
	run="$first $(go list ./... | sed "s#^$module#.#" | grep -vxF "${first// /$'\n'}" | tr '\n' ' ')"
fi
go test -count=1 -timeout 30m "$@" $run
if [ "${FUZZ:-0}" = 1 ] && [ "$pkgs" = ./... ]; then
	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 30s ./dlq
	go test -run '^$' -fuzz '^FuzzParseHeaderBlock$' -fuzztime 30s ./dlq
fi

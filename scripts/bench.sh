#!/usr/bin/env bash
# make bench-*: run a benchmark on real PostgreSQL and NATS and record its
# figures, the machine and the conditions in docs/BENCHMARKS.md between the
# markers <!-- bench:NAME:start --> and <!-- bench:NAME:end -->.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres.sh
name=${1:?usage: scripts/bench.sh ingest}
ensure_postgres
trap stop_postgres EXIT

case "$name" in
ingest) pkg=./dlq; bench='^BenchmarkIngestEndToEnd$' ;;
replay) pkg=./dlq; bench='^BenchmarkReplay100k$' ;;
*) log "unknown benchmark $name"; exit 2 ;;
esac

out=$(mktemp)
go test -run '^$' -bench "$bench" -benchtime=1x -count "${BENCH_COUNT:-3}" -timeout 60m "$pkg" | tee "$out"

pgset=$(psql "$DATABASE_URL" -qAtc "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('fsync','synchronous_commit','shared_buffers','max_wal_size')")
pgver=$(psql "$DATABASE_URL" -qAtc "show server_version")
section=$(mktemp)
{
	echo "<!-- bench:$name:start -->"
	echo "Run $(date -u +%Y-%m-%dT%H:%MZ) by \`make bench-$name\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
	echo
	echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr)"
	echo "- Go: $(go env GOVERSION); PostgreSQL $pgver ($pgset); NATS server in process, file storage"
	echo "- Load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo '```'
	grep -E '^(Benchmark|goos|goarch|cpu)' "$out"
	echo '```'
	echo "<!-- bench:$name:end -->"
} >"$section"

doc=docs/BENCHMARKS.md
if grep -q "<!-- bench:$name:start -->" "$doc"; then
	awk -v start="<!-- bench:$name:start -->" -v end="<!-- bench:$name:end -->" -v file="$section" '
		$0 == start { while ((getline line < file) > 0) print line; skip = 1; next }
		$0 == end { skip = 0; next }
		!skip { print }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
else
	{ echo; cat "$section"; } >>"$doc"
fi
log "results written to $doc"

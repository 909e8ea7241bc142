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

count=${BENCH_COUNT:-3}
benchtime=1x
explain=""
verbose=()
case "$name" in
ingest) pkg=./dlq; bench='^BenchmarkIngestEndToEnd$' ;;
replay) pkg=./dlq/replay; bench='^BenchmarkReplay100k$' ;;
indexes) pkg=./dlq; bench='^BenchmarkIngestIndexCost$'; count=${BENCH_COUNT:-1} ;;
replay-floor) pkg=./dlq/replay; bench='^BenchmarkReplayFloor$' ;;
hostile-page)
	# One hostile dead letter's page and downloads, 20 requests each: the
	# bytes allocated per request (B/op) are the figure.
	pkg=./web; bench='^BenchmarkHostileDeadLetterPage$'; benchtime=${BENCH_TIME:-20x} ;;
hostile-parse)
	# One dead letter of about 4 MB of hostile header lines, per shape:
	# how long ParseDLQ and the replay's read of its conflicts take; and
	# the fingerprint of one hostile Dlq-Stack of about 60 KB, per shape.
	pkg=./dlq; bench='^(BenchmarkParseHostileHeaders|BenchmarkFingerprintHostileStacks)$'; benchtime=${BENCH_TIME:-3x} ;;
ui)
	# The triage screens on BENCH_ROWS dead letters (default 1,000,000), kept
	# in the database quarantine_bench_<rows> between runs. One run measures
	# hundreds of requests per screen.
	pkg=./web; bench='^BenchmarkTriageUI$'; count=${BENCH_COUNT:-1}
	export BENCH_ROWS=${BENCH_ROWS:-1000000}
	explain=$(mktemp); export BENCH_EXPLAIN_OUT=$explain
	verbose=(-v) # the scenarios' descriptions are logged
	;;
*) log "unknown benchmark $name"; exit 2 ;;
esac

# Sections other than the default 1M triage run get their own markers.
section_name=$name
if [ "$name" = ui ] && [ "$BENCH_ROWS" != 1000000 ]; then section_name="ui-$BENCH_ROWS"; fi

out=$(mktemp)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
go test -run '^$' -bench "$bench" -benchtime="$benchtime" -count "$count" -timeout 180m "${verbose[@]}" "$pkg" | tee "$out"

pgset=$(psql "$DATABASE_URL" -qAtc "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('fsync','synchronous_commit','shared_buffers','max_wal_size'$([ "$name" = ui ] && echo ",'work_mem','effective_cache_size','random_page_cost','max_parallel_workers_per_gather','jit'"))")
pgver=$(psql "$DATABASE_URL" -qAtc "show server_version")
section=$(mktemp)
{
	echo "<!-- bench:$section_name:start -->"
	echo "Run $(date -u +%Y-%m-%dT%H:%MZ) by \`make bench-$name\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
	echo
	echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr)"
	echo "- Go: $(go env GOVERSION); PostgreSQL $pgver ($pgset); NATS server in process, file storage"
	echo "- Load average before the run: $load_before; after it: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	if [ "$name" = ui ]; then
		echo "- Dead letters: $BENCH_ROWS (\`console demo --rows\` mix, database quarantine_bench_*); server time = handler entry to last byte, in process, session lookup and authorization included"
		echo
		echo "Scenarios and conditions (fresh: the table as filled; ingested: after BENCH_INGEST=${BENCH_INGEST:-1000000} more dead letters through NATS):"
		echo
		grep -E 'bench_ui_test.go:[0-9]+: ' "$out" | sed -E 's/^.*bench_ui_test.go:[0-9]+: /- /' | sort -u
		echo
	fi
	echo '```'
	grep -E '^(goos|goarch|cpu)|^Benchmark[^[:space:]]*[[:space:]]+[0-9]' "$out"
	echo '```'
	if [ -n "$explain" ] && [ -s "$explain" ]; then
		echo
		echo "<details><summary>EXPLAIN (ANALYZE, BUFFERS) of the list queries (the keys step of each page)</summary>"
		echo
		cat "$explain"
		echo
		echo "</details>"
	fi
	echo "<!-- bench:$section_name:end -->"
} >"$section"

doc=docs/BENCHMARKS.md
if grep -q "<!-- bench:$section_name:start -->" "$doc"; then
	awk -v start="<!-- bench:$section_name:start -->" -v end="<!-- bench:$section_name:end -->" -v file="$section" '
		$0 == start { while ((getline line < file) > 0) print line; skip = 1; next }
		$0 == end { skip = 0; next }
		!skip { print }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
else
	{ echo; cat "$section"; } >>"$doc"
fi
log "results written to $doc"

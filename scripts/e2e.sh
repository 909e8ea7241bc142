#!/usr/bin/env bash
# Sourced by test.sh: what the end-to-end tests (e2e/) need besides
# PostgreSQL, found or installed once before `go test` runs.
#
#   ensure_e2e_tools
#       Dex (scripts/dex.sh build) and nats-server (built from the pinned
#       tools/nats module into .data/bin/nats-server) when missing or older
#       than their go.mod/go.sum; Debian's chromium, installed with apt-get
#       when missing and running as root (a clear error otherwise); the
#       PostgreSQL server binaries the fault test's private cluster needs.
#       Exports DEX_BIN, NATS_SERVER_BIN and CHROMIUM for the tests.

e2e_log() { printf 'e2e: %s\n' "$*" >&2; }

build_nats_server() {
	local bin=$PWD/.data/bin/nats-server tmp
	if [ -x "$bin" ] && [ ! tools/nats/go.mod -nt "$bin" ] && [ ! tools/nats/go.sum -nt "$bin" ]; then
		return 0
	fi
	e2e_log "building $bin from tools/nats (pinned nats-server)..."
	mkdir -p "$(dirname "$bin")"
	tmp="$bin.tmp.$$"
	if ! GOWORK=off go build -C tools/nats -o "$tmp" github.com/nats-io/nats-server/v2; then
		rm -f "$tmp"
		e2e_log "nats-server build failed"
		return 1
	fi
	mv -f "$tmp" "$bin"
	touch "$bin"
}

ensure_chromium() {
	local c
	for c in "${CHROMIUM:-}" /usr/bin/chromium "$(command -v chromium 2>/dev/null || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			CHROMIUM=$c
			return 0
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		e2e_log "chromium not found: the end-to-end tests drive it. Install Debian's chromium (sudo apt-get install -y chromium) or set CHROMIUM to a Chromium binary."
		return 1
	fi
	e2e_log "installing Debian's chromium (apt-get; a minute or two, once)..."
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 || {
		e2e_log "apt-get install chromium failed"
		return 1
	}
	CHROMIUM=/usr/bin/chromium
}

ensure_e2e_tools() {
	scripts/dex.sh build
	export DEX_BIN=$PWD/.data/bin/dex
	build_nats_server
	export NATS_SERVER_BIN=$PWD/.data/bin/nats-server
	ensure_chromium
	export CHROMIUM
	# The PostgreSQL fault test runs a private cluster of its own (initdb),
	# even when DATABASE_URL points elsewhere.
	if ! pg_bindir >/dev/null; then
		install_postgres || e2e_log "PostgreSQL server binaries not found; the PostgreSQL fault test will fail"
	fi
}

#!/usr/bin/env bash
# Dex, the OIDC identity provider for local runs and tests.
#
#   scripts/dex.sh build
#       Build .data/bin/dex from the tools/dex module (pinned Dex v2.45.1) when
#       it is missing or tools/dex/go.sum (or go.mod) is newer than it.
#   scripts/dex.sh config OUT ISSUER REDIRECT_URI...
#       Render dev/dex.yaml.tmpl to OUT for ISSUER (http://host:port/path; Dex
#       listens on that host:port) and the console client's redirect URIs.
#   scripts/dex.sh start ISSUER REDIRECT_URI...
#       Build if needed, write .data/dex/config.yaml, start Dex in the
#       background (log .data/dex/dex.log, pid .data/dex/dex.pid), wait until
#       ISSUER/.well-known/openid-configuration answers (up to
#       DEX_START_TIMEOUT seconds, default 30) and print the pid on stdout.
#       A Dex started earlier from this pid file is stopped first.
#   scripts/dex.sh stop
#       Stop the Dex in .data/dex/dex.pid, if it is running.
#
# Progress goes to stderr; only `start` writes to stdout (the pid).
# The demo users and their password are listed in dev/README.md.

set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEX_BIN="$ROOT/.data/bin/dex"
DEX_DIR="$ROOT/.data/dex"
DEX_CONFIG="$DEX_DIR/config.yaml"
DEX_LOG="$DEX_DIR/dex.log"
DEX_PID="$DEX_DIR/dex.pid"
TEMPLATE="$ROOT/dev/dex.yaml.tmpl"
START_TIMEOUT=${DEX_START_TIMEOUT:-30}

log() { printf 'dex: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}
usage() {
	cat >&2 <<-'EOF'
		usage: scripts/dex.sh build
		       scripts/dex.sh config OUT ISSUER REDIRECT_URI...
		       scripts/dex.sh start ISSUER REDIRECT_URI...
		       scripts/dex.sh stop
	EOF
	exit 2
}

# --- build -------------------------------------------------------------------

dex_build() {
	local mod="$ROOT/tools/dex"
	if [ -x "$DEX_BIN" ] && [ ! "$mod/go.sum" -nt "$DEX_BIN" ] && [ ! "$mod/go.mod" -nt "$DEX_BIN" ]; then
		return 0
	fi
	command -v go >/dev/null 2>&1 || die "go not found on PATH; it is needed to build Dex"
	mkdir -p "$(dirname "$DEX_BIN")"
	log "building $DEX_BIN from tools/dex (first build downloads modules and takes a few minutes)..."
	local start=$SECONDS tmp="$DEX_BIN.tmp.$$"
	# Build to a temporary name and rename, so a concurrent build or a running
	# Dex never sees a half-written binary. GOWORK=off keeps any go.work out.
	if ! (cd "$ROOT" && GOWORK=off go build -C tools/dex -o "../../.data/bin/$(basename "$tmp")" github.com/dexidp/dex/cmd/dex); then
		rm -f "$tmp"
		die "build failed"
	fi
	mv -f "$tmp" "$DEX_BIN"
	touch "$DEX_BIN" # go build may keep an old mtime when nothing changed
	log "built $DEX_BIN in $((SECONDS - start))s"
}

# --- config ------------------------------------------------------------------

# issuer_listen ISSUER: prints host:port Dex must listen on for ISSUER.
issuer_listen() {
	local issuer=$1 rest hostport
	case $issuer in
	http://*) rest=${issuer#http://} ;;
	https://*) die "issuer $issuer: only http:// issuers are supported (Dex is started without TLS)" ;;
	*) die "issuer $issuer: must start with http://" ;;
	esac
	hostport=${rest%%/*}
	[ -n "$hostport" ] || die "issuer $issuer: no host"
	case $hostport in
	*@*) die "issuer $issuer: user info is not allowed" ;;
	\[*\]:*) ;;                   # [v6]:port
	\[*\]) hostport="$hostport:80" ;; # [v6]
	*:*:*) die "issuer $issuer: put an IPv6 address in brackets" ;;
	*:*) ;;
	*) hostport="$hostport:80" ;;
	esac
	[[ ${hostport##*:} =~ ^[0-9]+$ ]] || die "issuer $issuer: bad port"
	printf '%s\n' "$hostport"
}

dex_config() {
	[ $# -ge 3 ] || usage
	local out=$1 issuer=${2%/} uri listen uris="" tmpl
	local uri_re='^https?://[^[:space:][:cntrl:]"\]+$'
	local issuer_re='^[^[:space:][:cntrl:]"\#?]+$'
	shift 2
	[ -f "$TEMPLATE" ] || die "template $TEMPLATE not found"
	listen=$(issuer_listen "$issuer")
	for uri in "$@"; do
		[[ $uri =~ $uri_re ]] ||
			die "redirect URI '$uri': must be an http(s) URL without spaces, quotes or backslashes"
		uris+="${uris:+, }\"$uri\""
	done
	[[ $issuer =~ $issuer_re ]] || die "issuer '$issuer' has characters not allowed here"
	tmpl=$(<"$TEMPLATE")
	tmpl=${tmpl//@@ISSUER@@/"$issuer"}
	tmpl=${tmpl//@@LISTEN@@/"$listen"}
	tmpl=${tmpl//@@REDIRECT_URIS@@/"[$uris]"}
	case $tmpl in *@@*@@*) die "template $TEMPLATE has a placeholder this script does not know" ;; esac
	mkdir -p "$(dirname "$out")"
	printf '%s\n' "$tmpl" >"$out.tmp.$$"
	mv -f "$out.tmp.$$" "$out"
	log "wrote $out (issuer $issuer, listening on $listen)"
}

# --- start / stop --------------------------------------------------------------

# running_pid: prints the pid from the pid file if that process is a live dex.
running_pid() {
	local pid
	[ -f "$DEX_PID" ] || return 1
	pid=$(<"$DEX_PID")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	if [ -r "/proc/$pid/cmdline" ]; then
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "dex serve" || return 1
	fi
	printf '%s\n' "$pid"
}

# http_ok URL: true when URL answers 200 (curl, else bash /dev/tcp for http://).
http_ok() {
	local url=$1
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null
		return
	fi
	local rest=${url#http://} hostport path host port status
	hostport=${rest%%/*}
	path=/${rest#*/}
	host=${hostport%:*}
	port=${hostport##*:}
	host=${host#[}
	host=${host%]}
	exec 3<>"/dev/tcp/$host/$port" 2>/dev/null || return 1
	printf 'GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$hostport" >&3
	IFS=' ' read -r -t 2 _ status _ <&3 || status=
	exec 3<&- 3>&-
	[ "$status" = 200 ]
}

# port_in_use HOST:PORT: true when something accepts TCP connections there.
port_in_use() {
	local host=${1%:*} port=${1##*:}
	host=${host#[}
	host=${host%]}
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null
}

dex_stop() {
	local pid i
	if ! pid=$(running_pid); then
		rm -f "$DEX_PID"
		log "not running"
		return 0
	fi
	log "stopping pid $pid"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid still running after 10s; sending KILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$DEX_PID"
}

dex_start() {
	[ $# -ge 2 ] || usage
	local issuer=${1%/} discovery listen pid deadline
	discovery="$issuer/.well-known/openid-configuration"
	listen=$(issuer_listen "$issuer")
	dex_build
	if running_pid >/dev/null; then
		log "a Dex from $DEX_PID is running; restarting it with the new config"
		dex_stop
	fi
	if port_in_use "$listen"; then
		die "something not started by this script already listens on $listen; stop it or use another port"
	fi
	dex_config "$DEX_CONFIG" "$@"
	: >"$DEX_LOG"
	log "starting: $DEX_BIN serve $DEX_CONFIG (log $DEX_LOG)"
	nohup "$DEX_BIN" serve "$DEX_CONFIG" </dev/null >>"$DEX_LOG" 2>&1 &
	pid=$!
	printf '%s\n' "$pid" >"$DEX_PID"
	deadline=$((SECONDS + START_TIMEOUT))
	while [ "$SECONDS" -lt "$deadline" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$DEX_PID"
			log "Dex exited during start-up; last lines of $DEX_LOG:"
			tail -n 30 "$DEX_LOG" >&2
			exit 1
		fi
		if http_ok "$discovery"; then
			log "ready at $issuer (pid $pid)"
			printf '%s\n' "$pid"
			return 0
		fi
		sleep 0.1
	done
	log "Dex did not answer at $discovery within ${START_TIMEOUT}s; last lines of $DEX_LOG:"
	tail -n 30 "$DEX_LOG" >&2
	dex_stop
	exit 1
}

# --- main --------------------------------------------------------------------

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
build) [ $# -eq 0 ] || usage; dex_build ;;
config) dex_config "$@" ;;
start) dex_start "$@" ;;
stop) [ $# -eq 0 ] || usage; dex_stop ;;
*) usage ;;
esac

#!/usr/bin/env bash
# screenshot.sh URL OUT.png [WIDTHxHEIGHT]
#
# Takes a screenshot of URL with headless Debian Chromium, at 1440x900 by
# default (390x844 for a phone). The browser gets a throwaway profile and no
# background networking, so the page's own requests are the only ones made.
# DARK=1 renders with prefers-color-scheme: dark. SCALE sets the device
# scale factor (default 1).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 URL OUT.png [WIDTHxHEIGHT]" >&2
	exit 2
fi
url=$1
out=$2
size=${3:-1440x900}
if ! [[ $size =~ ^([0-9]+)x([0-9]+)$ ]]; then
	echo "size must be WIDTHxHEIGHT, e.g. 390x844: $size" >&2
	exit 2
fi
width=${BASH_REMATCH[1]}
height=${BASH_REMATCH[2]}

chromium=${CHROMIUM:-}
if [ -z "$chromium" ]; then
	for c in chromium chromium-browser google-chrome; do
		if command -v "$c" >/dev/null 2>&1; then
			chromium=$(command -v "$c")
			break
		fi
	done
fi
if [ -z "$chromium" ]; then
	echo "chromium not found (apt-get install chromium, or set CHROMIUM)" >&2
	exit 1
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

extra=()
if [ "${DARK:-0}" = 1 ]; then
	extra+=(--force-dark-mode --blink-settings=preferredColorScheme=0)
fi

mkdir -p "$(dirname "$out")"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" --hide-scrollbars \
	--force-device-scale-factor="${SCALE:-1}" \
	--virtual-time-budget="${WAIT_MS:-2000}" \
	--window-size="$width,$height" \
	"${extra[@]}" \
	--screenshot="$out_abs" "$url" >/dev/null 2>"$profile/stderr" || {
	cat "$profile/stderr" >&2
	exit 1
}
if [ ! -s "$out_abs" ]; then
	cat "$profile/stderr" >&2
	echo "no screenshot written to $out_abs" >&2
	exit 1
fi
echo "$out_abs"

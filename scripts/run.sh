#!/usr/bin/env bash
# make run: PostgreSQL (found or private) with the console's owner and
# runtime roles, the console with an embedded NATS server (loopback, token
# in .data/nats-token), a development audit signing key (.data/), the Dex
# identity provider, and demo traffic. Ctrl-C stops all of it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres.sh

ADDR=${CONSOLE_ADDR:-127.0.0.1:8080}
DEX_ISSUER=${DEX_ISSUER:-http://127.0.0.1:5556/dex}
mkdir -p .data/bin .data/log
pids=()
cleanup() {
	# A second signal must not cut the stop short and leave PostgreSQL or Dex
	# running: stopped through timeout (or a supervisor), TERM reaches this
	# script from the process group and again from make, which passes the
	# signals it gets on to its jobs.
	trap '' INT TERM
	trap - EXIT
	stopping=1
	echo >&2
	log "stopping..."
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	[ -n "${OIDC_ISSUER_FROM_ENV:-}" ] || scripts/dex.sh stop
	stop_postgres
	log "stopped."
}
trap cleanup INT TERM EXIT

if ! command -v curl >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		log "installing curl (apt-get)..."
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >&2
	else
		log "curl is needed to wait for the console; install it (apt-get install curl)"
		exit 1
	fi
fi
check_console_urls || exit 1
ensure_postgres
ensure_console_db
log "building the console..."
go build -o .data/bin/console ./cmd/console

# A development key for signing audit checkpoints; production keeps its own
# (docs/access.md). The public half is what `console audit verify` needs.
export AUDIT_SIGNING_KEY_FILE=${AUDIT_SIGNING_KEY_FILE:-.data/audit-signing.pem}
if [ ! -f "$AUDIT_SIGNING_KEY_FILE" ]; then
	.data/bin/console audit keygen --out "$AUDIT_SIGNING_KEY_FILE" >&2
fi
export METRICS_ADDR=${METRICS_ADDR:-127.0.0.1:9464}
# NATS_URL naming the embedded server's own address means the embedded
# server (the demo publishes to it).
DEMO_NATS_URL=${NATS_URL:-nats://${NATS_EMBEDDED_ADDR:-127.0.0.1:4222}}
if [ "${NATS_URL:-}" = "nats://${NATS_EMBEDDED_ADDR:-127.0.0.1:4222}" ]; then unset NATS_URL; fi
# The embedded NATS server takes its token from (or writes it to) this file;
# the demo reads it from there.
if [ -z "${NATS_URL:-}" ]; then
	export NATS_TOKEN_FILE=${NATS_TOKEN_FILE:-.data/nats-token}
fi

export DLQ_WATCH_STREAMS=${DLQ_WATCH_STREAMS:-ORDERS,EMAILS,SEARCH,ANALYTICS,ACCOUNTS}
# The embedded NATS is this machine's own (one token, loopback): its
# give-ups captured from advisories may be replayed. On a NATS_URL of
# another server the console's default holds (false: such give-ups are
# stored flagged advisory_unverified, never replayed) unless the caller
# sets it, which a console on a shared NATS account does only once no
# client may publish on $JS.EVENT.ADVISORY.> (README, DLQ_ADVISORIES_TRUSTED).
if [ -z "${NATS_URL:-}" ]; then
	export DLQ_ADVISORIES_TRUSTED=${DLQ_ADVISORIES_TRUSTED:-true}
elif [ -z "${DLQ_ADVISORIES_TRUSTED:-}" ]; then
	log "NATS_URL names another server: give-ups captured from its advisories are flagged advisory_unverified and never replayed (set DLQ_ADVISORIES_TRUSTED=true once no client may publish on \$JS.EVENT.ADVISORY.>)"
fi
# The demo's services publish to app.<tenant>.<item type>: each tenant's
# replays may go back there, and nowhere else.
export REPLAY_SUBJECT_ALLOW=${REPLAY_SUBJECT_ALLOW:-"app.{tenant}.>"}
# Revalidate replays ask the owning service whether the original principal
# may still have the effect; for the demo, `console demo` answers on
# DEMO_REVALIDATE_SUBJECT from its own principal list (user:0 to user:29
# hold accounts:grant, user:30 to user:39 lost it), and the console asks
# there unless REVALIDATE_SUBJECT names another service. The demo never
# reads REVALIDATE_SUBJECT: it answers only the subject given as its own.
export DEMO_REVALIDATE_SUBJECT=${DEMO_REVALIDATE_SUBJECT-demo.revalidate}
export REVALIDATE_SUBJECT=${REVALIDATE_SUBJECT-$DEMO_REVALIDATE_SUBJECT}
if [ -n "$REVALIDATE_SUBJECT" ] && [ "$REVALIDATE_SUBJECT" = "$DEMO_REVALIDATE_SUBJECT" ]; then
	revalidation_by="answered by the demo"
else
	revalidation_by="the demo answers ${DEMO_REVALIDATE_SUBJECT:-nothing}"
fi

# The identity provider: OIDC_* from the environment, else Dex with the demo users.
if [ -n "${OIDC_ISSUER:-}" ]; then
	OIDC_ISSUER_FROM_ENV=1
else
	log "starting Dex (the first run builds it: a few minutes)..."
	scripts/dex.sh start "$DEX_ISSUER" "http://$ADDR/auth/callback" >/dev/null
	export OIDC_ISSUER=$DEX_ISSUER OIDC_CLIENT_ID=quarantine-console OIDC_CLIENT_SECRET=quarantine-dev-secret
	# The demo users' groups are named quarantine:<tenant>:<role>.
	export AUTHZ_GROUP_PREFIX=${AUTHZ_GROUP_PREFIX-quarantine:}
fi
.data/bin/console migrate >/dev/null
.data/bin/console serve --addr "$ADDR" >.data/log/serve.out 2> >(tee -a .data/log/console.log >&2) &
pids+=($!)

# Wait for the console (it starts an embedded NATS when NATS_URL is unset).
for _ in $(seq 1 100); do
	if curl -fsS "http://$ADDR/readyz" >/dev/null 2>&1; then break; fi
	if ! kill -0 "${pids[0]}" 2>/dev/null; then log "the console exited; see above"; exit 1; fi
	sleep 0.2
done
curl -fsS "http://$ADDR/readyz" >/dev/null || { log "the console is not ready"; exit 1; }

# What a shell of the operator's needs for the console's other commands
# (audit verify, policy status): the runtime role's URL, password included,
# so kept like .data/db-roles.env (mode 0600).
(umask 077 && printf 'export DATABASE_URL=%q\n' "$DATABASE_URL" >.data/console.env)

# The embedded server is the demo's own: streams of the demo's names an
# older demo left in .data/nats without its mark are taken over, not refused.
demo_own=()
if [ -z "${NATS_URL:-}" ]; then demo_own=(--take-over-unmarked); fi
NATS_URL=$DEMO_NATS_URL .data/bin/console demo --rate "${DEMO_RATE:-5}" "${demo_own[@]}" >/dev/null 2>>.data/log/demo.log &
demo_pid=$!
pids+=($demo_pid)

cat <<MSG

  Quarantine console: http://$ADDR
  Database:           $(redacted_url "$DATABASE_URL") (runtime role; migrated as $(redacted_url "$MIGRATE_DATABASE_URL"))
  Audit signing key:  $AUDIT_SIGNING_KEY_FILE (verify: . .data/console.env && .data/bin/console audit verify --public-key $AUDIT_SIGNING_KEY_FILE.pub)
  Demo traffic:       ${DEMO_RATE:-5} msg/s into streams ${DLQ_WATCH_STREAMS} (log: .data/log/demo.log)
  Revalidation:       ${REVALIDATE_SUBJECT:-(none: revalidate items cannot be replayed)} ($revalidation_by)
  Metrics:            http://$METRICS_ADDR/metrics

  Demo logins (identity provider $OIDC_ISSUER), password: quarantine-demo
    oncall@example.com     Olga Oncall    oncall in acme, globex
    approver@example.com   Arun Approver  approver in acme, globex
    approver2@example.com  Bea Approver   approver in acme, globex
    auditor@example.com    Ada Auditor    auditor in all tenants
    admin@example.com      Sam Admin      admin in all tenants
    viewer@example.com     Vic Viewer     viewer in acme

  Press Ctrl-C to stop everything.

MSG
wait -n "${pids[@]}" || true
# The demo refuses streams it did not make (README, `console demo`): say why it stopped.
if [ -z "${stopping:-}" ] && ! kill -0 "$demo_pid" 2>/dev/null; then
	log "the demo stopped; the end of .data/log/demo.log:"
	tail -n 3 .data/log/demo.log >&2
fi

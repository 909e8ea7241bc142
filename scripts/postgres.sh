#!/usr/bin/env bash
# Sourced by run.sh and test.sh. ensure_postgres sets DATABASE_URL:
#   1. DATABASE_URL from the environment, if set;
#   2. else PostgreSQL on 127.0.0.1:5432, if it answers for user postgres;
#   3. else a private cluster under .data/pg on 127.0.0.1:$PRIVATE_PG_PORT,
#      installing Debian's postgresql first when it is missing and we are root
#      (under /var/lib/quarantine/ when user postgres cannot reach .data/pg).
# It sets PG_STARTED_BY_US=1 when it started the private cluster; stop_postgres
# stops it again.

PRIVATE_PG_PORT=${PRIVATE_PG_PORT:-54329}
PG_DATA_DIR_FROM_ENV=${PG_DATA_DIR:+1}
PG_DATA_DIR=${PG_DATA_DIR:-$PWD/.data/pg}
# Absolute: the cluster's commands run from / (as_pg_owner).
case $PG_DATA_DIR in /*) ;; *) PG_DATA_DIR=$PWD/$PG_DATA_DIR ;; esac
PG_STARTED_BY_US=0
# Whether DATABASE_URL came from the environment, before ensure_postgres
# sets one (ensure_console_db uses an owner's URL only beside it).
PG_ENV_DATABASE_URL=${DATABASE_URL:+1}

log() { printf '%s\n' "$*" >&2; }

pg_bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

as_pg_owner() {
	# From /: user postgres may not be able to enter the working directory.
	if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

install_postgres() {
	if [ "$(id -u)" != 0 ]; then
		log "postgres: PostgreSQL server binaries not found; install Debian's postgresql or set DATABASE_URL"
		return 1
	fi
	log "postgres: installing Debian's postgresql (apt-get)..."
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
	# Debian starts a system cluster on 5432 after install; we do not use it.
	if command -v pg_lsclusters >/dev/null 2>&1; then
		pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
			pg_ctlcluster "$ver" "$name" stop >/dev/null 2>&1 || true
		done
	fi
}

ensure_postgres() {
	if [ -n "${DATABASE_URL:-}" ]; then
		log "postgres: using DATABASE_URL from the environment"
		return 0
	fi
	if command -v psql >/dev/null 2>&1 &&
		PGCONNECT_TIMEOUT=2 psql "postgres://postgres@127.0.0.1:5432/postgres" -qAtc 'select 1' >/dev/null 2>&1; then
		export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		log "postgres: using the server on 127.0.0.1:5432"
		return 0
	fi
	local bin
	bin=$(pg_bindir) || { install_postgres && bin=$(pg_bindir); } || return 1
	mkdir -p "$PG_DATA_DIR"
	if [ "$(id -u)" = 0 ]; then
		chown postgres:postgres "$PG_DATA_DIR"
		# The cluster runs as user postgres, which cannot reach a checkout
		# under a directory private to root (/root is mode 0700 on Debian).
		# Then the cluster lives where postgres can reach it, one per checkout.
		if ! as_pg_owner test -w "$PG_DATA_DIR"; then
			if [ -n "$PG_DATA_DIR_FROM_ENV" ]; then
				log "postgres: user postgres cannot write PG_DATA_DIR=$PG_DATA_DIR (is a directory above it private to root?); choose a directory it can reach"
				return 1
			fi
			rmdir "$PG_DATA_DIR" 2>/dev/null || true
			PG_DATA_DIR=/var/lib/quarantine/pg-$(printf '%s' "$PWD" | sha256sum | cut -c1-16)
			log "postgres: user postgres cannot reach $PWD; the private cluster lives in $PG_DATA_DIR"
			mkdir -p "$PG_DATA_DIR"
			chown postgres:postgres "$PG_DATA_DIR"
		fi
	fi
	chmod 700 "$PG_DATA_DIR"
	if [ ! -f "$PG_DATA_DIR/PG_VERSION" ]; then
		log "postgres: creating a private cluster in $PG_DATA_DIR"
		as_pg_owner "$bin/initdb" -D "$PG_DATA_DIR" -U app --auth=trust -E UTF8 --no-locale >/dev/null || return 1
	fi
	export DATABASE_URL="postgres://app@127.0.0.1:$PRIVATE_PG_PORT/postgres?sslmode=disable"
	if as_pg_owner "$bin/pg_ctl" -D "$PG_DATA_DIR" status >/dev/null 2>&1; then
		log "postgres: private cluster already running on 127.0.0.1:$PRIVATE_PG_PORT"
		return 0
	fi
	log "postgres: starting the private cluster on 127.0.0.1:$PRIVATE_PG_PORT"
	as_pg_owner "$bin/pg_ctl" -D "$PG_DATA_DIR" -w -t 60 -l "$PG_DATA_DIR/server.log" \
		-o "-h 127.0.0.1 -p $PRIVATE_PG_PORT -k $PG_DATA_DIR -c max_connections=300 -c shared_buffers=512MB -c fsync=${PG_FSYNC:-on} -c synchronous_commit=${PG_SYNC_COMMIT:-on} -c full_page_writes=${PG_FSYNC:-on}" \
		start >/dev/null || { log "postgres: start failed; see $PG_DATA_DIR/server.log"; return 1; }
	PG_STARTED_BY_US=1
}

stop_postgres() {
	[ "$PG_STARTED_BY_US" = 1 ] || return 0
	local bin
	bin=$(pg_bindir) || return 0
	as_pg_owner "$bin/pg_ctl" -D "$PG_DATA_DIR" -m fast -w stop >/dev/null 2>&1 || true
	PG_STARTED_BY_US=0
}

# psql_bin prints a psql to use: the private cluster's, else the PATH's.
psql_bin() {
	local bin
	if bin=$(pg_bindir) && [ -x "$bin/psql" ]; then echo "$bin/psql"; return 0; fi
	command -v psql
}

# url_as ROLE PASSWORD DB prints DATABASE_URL with its user, password and
# database replaced (host, port and query kept).
url_as() {
	local url=$DATABASE_URL rest host query=""
	rest=${url#*://}
	case $rest in *@*) rest=${rest#*@} ;; esac
	host=${rest%%/*}
	case $url in *\?*) query="?${url#*\?}" ;; esac
	printf 'postgres://%s:%s@%s/%s%s' "$1" "$2" "$host" "$3" "$query"
}

# ensure_console_db gives the console its two roles (docs/access.md):
# MIGRATE_DATABASE_URL (the owner, quarantine_owner, which migrates) and
# DATABASE_URL (quarantine_app, a member of the group role
# quarantine_runtime, which serve and worker use). When both are set in the
# environment they are used as they are. Otherwise DATABASE_URL is taken as
# an administrator's: the roles and the database "quarantine" are created
# when missing, with passwords kept in .data/db-roles.env (mode 0600).
# check_console_urls refuses MIGRATE_DATABASE_URL set without DATABASE_URL,
# before anything is installed or started: DATABASE_URL would be the
# administrator's ensure_postgres chooses, and the console would serve as a
# role that may alter its audit log, which it refuses at start.
check_console_urls() {
	if [ -n "${MIGRATE_DATABASE_URL:-}" ] && [ -z "$PG_ENV_DATABASE_URL" ]; then
		log "postgres: MIGRATE_DATABASE_URL is set but DATABASE_URL is not; set both (the owner's and the console's runtime role's, docs/access.md), or neither"
		return 1
	fi
}

ensure_console_db() {
	if [ -n "${MIGRATE_DATABASE_URL:-}" ]; then
		check_console_urls || return 1
		log "postgres: using MIGRATE_DATABASE_URL and DATABASE_URL from the environment"
		return 0
	fi
	local psql secrets=.data/db-roles.env exists
	psql=$(psql_bin) || { log "postgres: psql is needed to create the console's roles; install postgresql-client or set MIGRATE_DATABASE_URL and DATABASE_URL"; return 1; }
	mkdir -p .data
	if [ ! -f "$secrets" ]; then
		(umask 077 && printf 'QUARANTINE_OWNER_PASSWORD=%s\nQUARANTINE_APP_PASSWORD=%s\n' \
			"$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$secrets")
	fi
	# shellcheck disable=SC1090
	. "$secrets"
	"$psql" "$DATABASE_URL" -qAt -v ON_ERROR_STOP=1 >/dev/null <<SQL || { log "postgres: could not create the console's roles (the DATABASE_URL role needs CREATEROLE and CREATEDB)"; return 1; }
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quarantine_runtime') THEN CREATE ROLE quarantine_runtime NOLOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quarantine_owner') THEN CREATE ROLE quarantine_owner LOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quarantine_app') THEN CREATE ROLE quarantine_app LOGIN IN ROLE quarantine_runtime; END IF;
END \$\$;
ALTER ROLE quarantine_owner PASSWORD '$QUARANTINE_OWNER_PASSWORD';
ALTER ROLE quarantine_app PASSWORD '$QUARANTINE_APP_PASSWORD';
SQL
	exists=$("$psql" "$DATABASE_URL" -qAtc "SELECT 1 FROM pg_database WHERE datname = 'quarantine'")
	if [ "$exists" != 1 ]; then
		log "postgres: creating database quarantine owned by quarantine_owner"
		"$psql" "$DATABASE_URL" -qAt -v ON_ERROR_STOP=1 -c "CREATE DATABASE quarantine OWNER quarantine_owner" >/dev/null || return 1
	fi
	MIGRATE_DATABASE_URL=$(url_as quarantine_owner "$QUARANTINE_OWNER_PASSWORD" quarantine)
	DATABASE_URL=$(url_as quarantine_app "$QUARANTINE_APP_PASSWORD" quarantine)
	export MIGRATE_DATABASE_URL DATABASE_URL
}

# redacted_url prints a connection string without its password.
redacted_url() { printf '%s' "$1" | sed -E 's#(://[^:/@]+):[^@]*@#\1:xxxxx@#; s#\?.*##'; }

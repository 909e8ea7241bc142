// Package testdb gives each test a fresh PostgreSQL database with the
// migrated schema. The server comes from DATABASE_URL, which `make test`
// sets (scripts/postgres.sh); that role must be allowed to create databases
// and roles. A template database is migrated once per schema version and
// copied with CREATE DATABASE ... TEMPLATE (onServer), which takes a
// tenth of a second.
//
// Like a deployment, every database has two roles (docs/access.md): the
// owner (OwnerRole), which migrates, and a login role in the group role
// quarantine_runtime (RuntimeRole), which is what the console connects as.
// Tests use the runtime role unless they need the owner's powers.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/migrations"
)

// DB is one test's database.
type DB struct {
	Name string
	// URL connects as the runtime role: the console's DATABASE_URL.
	URL string
	// OwnerURL connects as the owner of the schema: MIGRATE_DATABASE_URL.
	OwnerURL string
	// AdminURL connects as the server's role from DATABASE_URL (a superuser
	// under `make test`), for tests that play a database administrator.
	AdminURL string
	// Pool connects as the runtime role, OwnerPool as the owner (for fixtures
	// that need DDL, statistics or disabled triggers). Pools connect lazily.
	Pool      *pgxpool.Pool
	OwnerPool *pgxpool.Pool
}

// Roles of the test databases, created once per server. The password only
// matters on servers that ask for one.
const (
	OwnerRole    = "quarantine_test_owner"
	RuntimeRole  = "quarantine_test_runtime"
	rolePassword = "quarantine-test"
	// runtimeGroup is the group role migration 0006 grants to.
	runtimeGroup = "quarantine_runtime"
)

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// ServerURL returns DATABASE_URL, failing the test with instructions when it
// is not set.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatal("DATABASE_URL is not set: run the tests with `make test`, which finds or starts PostgreSQL")
	}
	return u
}

// New creates a database for this test from the migrated template and drops
// it when the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	server := ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx, server) })
	if templateErr != nil {
		t.Fatalf("prepare template database: %v", templateErr)
	}

	name := "qt_" + randomHex(8)
	admin, strategy, err := onServer(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s%s OWNER %s", name, templateName, strategy, OwnerRole)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	db := &DB{Name: name}
	if db.URL, err = AsRole(server, name, RuntimeRole, rolePassword); err != nil {
		t.Fatal(err)
	}
	if db.OwnerURL, err = AsRole(server, name, OwnerRole, rolePassword); err != nil {
		t.Fatal(err)
	}
	if db.AdminURL, err = WithDatabase(server, name); err != nil {
		t.Fatal(err)
	}
	if db.Pool, err = newPool(ctx, db.URL); err != nil {
		t.Fatalf("open pool: %v", err)
	}
	if db.OwnerPool, err = newPool(ctx, db.OwnerURL); err != nil {
		t.Fatalf("open owner pool: %v", err)
	}
	t.Cleanup(func() {
		db.Pool.Close()
		db.OwnerPool.Close()
		// DROP DATABASE waits for a checkpoint, which on a machine running
		// several clusters at once can take well over 30 s: the bound is
		// for a server that hangs, not for a busy one.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return db
}

// newPool connects lazily to u with JIT off, as every pool of the console
// connects (app.OpenPool), so that a test's statements are planned and run
// as the console's are: with JIT on, the first read of a selection of a few
// thousand dead letters (replay's CreateDrafts) spent 7.9 s compiling.
func newPool(ctx context.Context, u string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	return pgxpool.NewWithConfig(ctx, cfg)
}

var (
	serverOnce sync.Once
	serverPool *pgxpool.Pool
	strategy   string
	serverErr  error
)

// onServer returns this process's connections to the server of
// DATABASE_URL that create and drop the test databases, and the strategy
// of CREATE DATABASE there. The connections are kept: one made for each
// database and each drop cost the server a process each (about 20 ms of
// its CPU on the machine of docs/BENCHMARKS.md, twice per test). Where the
// server has the choice (PostgreSQL 15 and later) the template's files are
// copied whole after a checkpoint, where the default (WAL_LOG) reads and
// logs every page of the template's 12 MB: under `make test` the audit and
// authz packages took 50-55 s instead of 66-68 s with it, PostgreSQL's CPU
// 70 s instead of 97-104 (2026-12-06, two runs each, alternating).
func onServer(ctx context.Context, server string) (*pgxpool.Pool, string, error) {
	serverOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(server)
		if err != nil {
			serverErr = fmt.Errorf("parse DATABASE_URL %s: %w", redact(server), err)
			return
		}
		cfg.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			serverErr = fmt.Errorf("connect to %s: %w", redact(server), err)
			return
		}
		var major int
		if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int / 10000").Scan(&major); err != nil {
			pool.Close()
			serverErr = fmt.Errorf("connect to %s: %w", redact(server), err)
			return
		}
		serverPool = pool
		if major >= 15 {
			strategy = " STRATEGY FILE_COPY"
		}
	})
	return serverPool, strategy, serverErr
}

// RuntimeURL returns the connection string of database name on the server
// of DATABASE_URL as the runtime role, for databases the tests keep (the
// benchmarks'); EnsureRoles makes sure the role exists.
func RuntimeURL(t testing.TB, name string) string {
	t.Helper()
	u, err := AsRole(ServerURL(t), name, RuntimeRole, rolePassword)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// EnsureRoles creates the test roles on the server of DATABASE_URL when
// they are missing.
func EnsureRoles(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL(t))
	if err != nil {
		t.Fatalf("connect to %s: %v", redact(ServerURL(t)), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(74501)"); err != nil {
		t.Fatalf("lock role creation: %v", err)
	}
	if _, err := admin.Exec(ctx, createRoles); err != nil {
		t.Fatalf("create the test roles (the DATABASE_URL role needs CREATEROLE): %v", err)
	}
}

// AsRole returns the connection string u pointing at database name as
// role with password.
func AsRole(u, name, role, password string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	parsed.Path = "/" + name
	parsed.User = url.UserPassword(role, password)
	return parsed.String(), nil
}

// Creates the roles when missing; a role that exists keeps its grants.
// Concurrent test binaries are serialised by the template lock.
const createRoles = `
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + runtimeGroup + `') THEN
        CREATE ROLE ` + runtimeGroup + ` NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + OwnerRole + `') THEN
        CREATE ROLE ` + OwnerRole + ` LOGIN PASSWORD '` + rolePassword + `';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + RuntimeRole + `') THEN
        CREATE ROLE ` + RuntimeRole + ` LOGIN PASSWORD '` + rolePassword + `' IN ROLE ` + runtimeGroup + `;
    END IF;
END $$`

// WithDatabase returns the connection string u pointing at database name.
func WithDatabase(u, name string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	parsed.Path = "/" + name
	return parsed.String(), nil
}

// ensureTemplate creates (once per schema content) a migrated template
// database. An advisory lock on the server serialises test binaries that
// start together.
func ensureTemplate(ctx context.Context, server string) (string, error) {
	all, err := migrations.All()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range all {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Number, m.Name, m.Up)
	}
	// The owner role is part of what a template is: older templates were
	// owned by the server's role.
	fmt.Fprintf(h, "owner\x00%s\x00", OwnerRole)
	name := "qt_template_" + hex.EncodeToString(h.Sum(nil))[:16]

	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(server), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(74501)"); err != nil {
		return "", fmt.Errorf("lock template creation: %w", err)
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(74501)") //nolint:errcheck // released with the connection anyway

	if _, err := admin.Exec(ctx, createRoles); err != nil {
		return "", fmt.Errorf("create the test roles (the DATABASE_URL role needs CREATEROLE): %w", err)
	}
	var ready bool
	err = admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&ready)
	if err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if ready {
		return name, nil
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
		return "", fmt.Errorf("drop half-made template: %w", err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, OwnerRole)); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	// Migrated by the owner, as `console migrate` does in a deployment.
	tmplURL, err := AsRole(server, name, OwnerRole, rolePassword)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, tmplURL)
	if err != nil {
		return "", fmt.Errorf("connect to template: %w", err)
	}
	if _, err := migrations.Migrate(ctx, conn); err != nil {
		conn.Close(ctx)
		return "", err
	}
	conn.Close(ctx)
	// Marked as template last: a template that exists is a complete one.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH is_template = true", name)); err != nil {
		return "", fmt.Errorf("mark template: %w", err)
	}
	return name, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparseable DATABASE_URL)"
	}
	return p.Redacted()
}

// ExecWithoutTrigger runs sql (with args) as the owner with table's
// trigger disabled for it alone, in one transaction, then enables the
// trigger again as ALWAYS (as the audit tables' triggers are): for a
// fixture a later migration's trigger refuses, such as a row written
// before that migration, which the code must still handle. writersLock,
// when not 0, is the advisory lock the table's writers take before they
// write it (audit_checkpoints: audit.CheckpointLockKey), taken first:
// disabling a trigger locks the whole table, and a running console's
// writer holding that lock would otherwise wait on the table while this
// waits on the lock (a deadlock, CI33).
func (db *DB) ExecWithoutTrigger(t testing.TB, writersLock int64, table, trigger, sql string, args ...any) {
	t.Helper()
	db.ExecWithoutTriggerAfter(t, func(ctx context.Context, tx pgx.Tx) error {
		if writersLock == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", writersLock)
		return err
	}, table, trigger, sql, args...)
}

// ExecWithoutTriggerAfter is ExecWithoutTrigger with before run first in
// the same transaction, before the trigger is disabled: it takes the
// table's writers' locks (so it must not touch table itself) and may
// write what the fixture's sql then reads, such as an audit entry that
// holds the chain's lock until the fixture commits (audit.Append), so
// that no checkpoint recorder signs it before the fixture's own row does.
func (db *DB) ExecWithoutTriggerAfter(t testing.TB, before func(context.Context, pgx.Tx) error, table, trigger, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, db.OwnerPool, func(tx pgx.Tx) error {
		if err := before(ctx, tx); err != nil {
			return err
		}
		id := pgx.Identifier{table}.Sanitize()
		trg := pgx.Identifier{trigger}.Sanitize()
		if _, err := tx.Exec(ctx, "ALTER TABLE "+id+" DISABLE TRIGGER "+trg); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER TABLE "+id+" ENABLE ALWAYS TRIGGER "+trg)
		return err
	})
	if err != nil {
		t.Fatalf("exec without trigger %s on %s: %v", trigger, table, err)
	}
}

// OwnerAt connects as the owner of the schema and brings the database to
// version, up or down, for a test of what a migration does with the rows
// it finds; the connection is closed when the test ends.
func (db *DB) OwnerAt(t testing.TB, version int32) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.OwnerURL)
	if err != nil {
		t.Fatalf("connect as the owner: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if err := migrations.MigrateTo(ctx, conn, version); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
	return conn
}

// Package testdb gives each test a fresh PostgreSQL database with the
// migrated schema. The server comes from DATABASE_URL, which `make test`
// sets (scripts/postgres.sh). A template database is migrated once per
// schema version and copied with CREATE DATABASE ... TEMPLATE, which takes
// tens of milliseconds.
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
	URL  string // connection string for this database
	Pool *pgxpool.Pool
}

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
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", redact(server), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, templateName)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	dbURL, err := WithDatabase(server, name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return &DB{Name: name, URL: dbURL, Pool: pool}
}

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
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", name)); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	tmplURL, err := WithDatabase(server, name)
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

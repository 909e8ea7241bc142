package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRev35ShadowSchemaCannotCaptureAppends: the console's connections
// named tables by PostgreSQL's default search_path, "$user", public. A
// runtime login given CREATE on the database (GRANT ALL ON DATABASE, a
// common grant) passes the role check, which asks only about schema
// public, and may then make a schema named after itself with an audit_log
// of its own: every append the audit package makes (INSERT INTO audit_log)
// went there, where nothing guards or chains it, while public.audit_log
// saw none of them and its chain still verified. The console's
// connections (its pools and the CLI's) now name tables in public only.
func TestRev35ShadowSchemaCannotCaptureAppends(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	role := "qt_shadow_" + db.Name
	_, err = admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN PASSWORD 'x' IN ROLE quarantine_runtime`)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), db.AdminURL)
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
			return
		}
		defer c.Close(context.Background())
		for _, stmt := range []string{`DROP OWNED BY ` + role, `DROP ROLE IF EXISTS ` + role} {
			if _, err := c.Exec(context.Background(), stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	_, err = admin.Exec(ctx, `GRANT CREATE ON DATABASE `+db.Name+` TO `+role)
	require.NoError(t, err)
	u, err := testdb.AsRole(testdb.ServerURL(t), db.Name, role, "x")
	require.NoError(t, err)

	// The shadow, made by the runtime login itself; a plain connection
	// with PostgreSQL's default search_path resolves audit_log to it.
	plain, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer plain.Close(ctx)
	_, err = plain.Exec(ctx, `CREATE SCHEMA `+role+`; CREATE TABLE `+role+`.audit_log (LIKE public.audit_log INCLUDING DEFAULTS)`)
	require.NoError(t, err)
	var resolved string
	require.NoError(t, plain.QueryRow(ctx, `SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'audit_log'::regclass`).Scan(&resolved))
	require.Equal(t, role, resolved, "the attack's premise: the default search_path finds the shadow first")

	pool, err := OpenPool(ctx, u, 10*time.Second, PoolConfig{Name: "web", StatementTimeout: 10 * time.Second},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer pool.Close()
	conn, err := Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for name, q := range map[string]interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}{"OpenPool": pool, "Connect": conn} {
		require.NoError(t, q.QueryRow(ctx, `SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'audit_log'::regclass`).Scan(&resolved))
		assert.Equal(t, "public", resolved, "%s: audit_log names public.audit_log", name)
	}

	_, err = audit.AppendFunc(ctx, pool, audit.NewEvent(quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-jane"},
		quarantine.RequestMeta{}, "dead_letter.discard"))
	require.NoError(t, err)
	var public, shadow int
	require.NoError(t, admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM public.audit_log WHERE action = 'dead_letter.discard'),
	                                               (SELECT count(*) FROM `+role+`.audit_log)`).Scan(&public, &shadow))
	assert.Equal(t, 1, public, "the append reaches the audit log")
	assert.Zero(t, shadow, "the shadow took the append")
}

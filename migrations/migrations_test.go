package migrations_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

func TestMigrateIsIdempotentAndReversible(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	all, err := migrations.All()
	require.NoError(t, err)

	conn, err := pgx.Connect(ctx, db.OwnerURL)
	require.NoError(t, err)
	defer conn.Close(ctx)

	// The template is already migrated: running again changes nothing.
	v, err := migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, int32(len(all)), v)

	// Every down file undoes its up file, in reverse order.
	for i := len(all) - 1; i >= 0; i-- {
		require.NotEmpty(t, all[i].Down, "migration %04d has no down file", all[i].Number)
		_, err := conn.Exec(ctx, all[i].Down)
		require.NoError(t, err, "down %04d_%s", all[i].Number, all[i].Name)
	}
	var tables int
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> $1`, migrations.VersionTable).Scan(&tables))
	require.Zero(t, tables, "tables left after all down migrations")
}

// TestRuntimeRoleCannotAlterAudit connects as the console's runtime role and
// tries everything that would rewrite history: each fails on privileges,
// before any trigger has to refuse it, and the log is unchanged.
func TestRuntimeRoleCannotAlterAudit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	// It appends, but only the next entry of the chain (migration 0034):
	// a row past the head is refused.
	_, err := db.Pool.Exec(ctx, `INSERT INTO audit_log (seq, at, action, outcome, actor_email_verified, prev_hash, hash)
        VALUES (2, now(), 'test.event', 'ok', false, sha256('y'), sha256('x'))`)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "an entry off the chain is refused: %v", err)
	assert.Equal(t, "23514", pgErr.Code, pgErr.Message)
	entry, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK})
	require.NoError(t, err, "the runtime role appends")
	_, err = db.Pool.Exec(ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES (1, $1, now(), 'on_demand', 'k', sha256('p'), sha512('s'))`, entry.Hash)
	require.NoError(t, err, "the runtime role records checkpoints")

	for _, stmt := range []string{
		`UPDATE audit_log SET reason = 'rewritten'`,
		`DELETE FROM audit_log`,
		`TRUNCATE audit_log`,
		`DROP TRIGGER audit_log_no_update_delete ON audit_log`,
		`DROP TRIGGER audit_log_no_truncate ON audit_log`,
		`ALTER TABLE audit_log DISABLE TRIGGER ALL`,
		`ALTER TABLE audit_log DROP CONSTRAINT audit_log_field_bounds_check`,
		`DROP TABLE audit_log`,
		`CREATE TRIGGER sneak BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_reject_change()`,
		`UPDATE audit_checkpoints SET reason = 'count'`,
		`DELETE FROM audit_checkpoints`,
		`TRUNCATE audit_checkpoints`,
		`DROP TRIGGER audit_checkpoints_no_update_delete ON audit_checkpoints`,
		`CREATE TABLE shadow (x int)`,
		`CREATE FUNCTION audit_log_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
		`SET session_replication_role = replica`,
	} {
		t.Run(strings.Fields(stmt)[0]+"_"+strings.Fields(stmt)[1], func(t *testing.T) {
			_, err := db.Pool.Exec(ctx, stmt)
			require.Error(t, err, stmt)
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr), "%s: %v", stmt, err)
			// 42501 insufficient_privilege: also what the triggers raise,
			// so the message must be PostgreSQL's, not the trigger's.
			assert.Equal(t, "42501", pgErr.Code, "%s: %v", stmt, err)
			assert.NotContains(t, pgErr.Message, "append-only", "refused by privileges, not only by the trigger")
		})
	}
	var n int
	var reason string
	require.NoError(t, db.OwnerPool.QueryRow(ctx, `SELECT count(*), min(reason) FROM audit_log`).Scan(&n, &reason))
	assert.Equal(t, 1, n)
	assert.Empty(t, reason)
	require.NoError(t, migrations.CheckRuntimeRole(ctx, db.Pool), "the runtime role passes the console's own check")
	err = migrations.CheckRuntimeRole(ctx, db.OwnerPool)
	require.ErrorIs(t, err, migrations.ErrPrivileged, "the owner does not")
	assert.Contains(t, err.Error(), "owns the audit log")
}

// TestRuntimeRoleCheckRefusesMembers: a login role that is a member of
// quarantine_runtime but also, without inheriting, of the schema's owner or
// of a superuser role holds no dangerous privilege until it runs SET ROLE,
// and then it may switch the audit triggers off. The console's check
// refuses both, naming the role they reach.
func TestRuntimeRoleCheckRefusesMembers(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	suffix := db.Name // roles belong to the server: one set per test database
	owned := "qt_member_owner_" + suffix
	supered := "qt_member_super_" + suffix
	super := "qt_super_" + suffix
	for _, stmt := range []string{
		`CREATE ROLE ` + super + ` NOLOGIN SUPERUSER`,
		`CREATE ROLE ` + owned + ` LOGIN NOINHERIT PASSWORD 'x' IN ROLE quarantine_runtime, ` + testdb.OwnerRole,
		`CREATE ROLE ` + supered + ` LOGIN NOINHERIT PASSWORD 'x' IN ROLE quarantine_runtime, ` + super,
	} {
		_, err := admin.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), db.AdminURL)
		if err != nil {
			t.Errorf("drop test roles: %v", err)
			return
		}
		defer c.Close(context.Background())
		for _, r := range []string{owned, supered, super} {
			if _, err := c.Exec(context.Background(), `DROP ROLE IF EXISTS `+r); err != nil {
				t.Errorf("drop role %s: %v", r, err)
			}
		}
	})

	for _, tt := range []struct{ role, reaches string }{{owned, testdb.OwnerRole}, {supered, super}} {
		u, err := testdb.AsRole(testdb.ServerURL(t), db.Name, tt.role, "x")
		require.NoError(t, err)
		conn, err := pgx.Connect(ctx, u)
		require.NoError(t, err)
		defer conn.Close(ctx)

		// What the check is for: without SET ROLE nothing is allowed...
		_, err = conn.Exec(ctx, `ALTER TABLE audit_log DISABLE TRIGGER ALL`)
		require.Error(t, err, "%s: NOINHERIT holds no privilege of %s", tt.role, tt.reaches)
		// ...with it, the append-only triggers go (rolled back here).
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SET LOCAL ROLE `+tt.reaches)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `ALTER TABLE audit_log DISABLE TRIGGER ALL`)
		require.NoError(t, err, "%s reaches %s's power by SET ROLE", tt.role, tt.reaches)
		require.NoError(t, tx.Rollback(ctx))

		err = migrations.CheckRuntimeRole(ctx, conn)
		require.ErrorIs(t, err, migrations.ErrPrivileged, "%s must be refused", tt.role)
		assert.Contains(t, err.Error(), `is a member of "`+tt.reaches+`"`)
	}
}

// TestRuntimeRolePrivileges lists what the runtime role may do on every
// table. A new table fails this test until its line is added here: decide
// whether it may be changed (most) or only appended (audit-like tables
// revoke UPDATE and DELETE in their migration).
func TestRuntimeRolePrivileges(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	want := map[string]string{
		"audit_log":                        "INSERT,SELECT",
		"audit_checkpoints":                "INSERT,SELECT",
		"casbin_rule":                      "SELECT",
		"access_version":                   "SELECT", // bumped by the owner's trigger function (migration 0024)
		migrations.VersionTable:            "SELECT",
		"dead_letters":                     "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_counts":               "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_arrivals":             "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_arrivals_minute":      "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_arrivals_tenant_hour": "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_groups":               "DELETE,INSERT,SELECT,UPDATE",
		"dead_letter_deltas":               "DELETE,INSERT,SELECT,UPDATE",
		"sessions":                         "DELETE,INSERT,SELECT,UPDATE",
		"role_bindings":                    "DELETE,INSERT,SELECT,UPDATE",
		"user_sessions":                    "DELETE,INSERT,SELECT,UPDATE",
		"user_directory":                   "DELETE,INSERT,SELECT,UPDATE",
		"replay_requests":                  "DELETE,INSERT,SELECT,UPDATE",
		"replay_items":                     "DELETE,INSERT,SELECT,UPDATE",
		"replay_approvals":                 "DELETE,INSERT,SELECT,UPDATE",
		"identity_addresses":               "INSERT,SELECT", // append-only (migration 0057, in place of 0055's replay_approval_addresses): an address an identity was seen with is never lost
		"replay_request_approvers":         "INSERT,SELECT", // append-only (migration 0059): whoever approved a request stays one of its people after an edit
		"replay_jobs":                      "DELETE,INSERT,SELECT,UPDATE",
		"replay_ledger":                    "INSERT,SELECT", // append-only (migration 0011): what was replayed stays replayed
		"group_triage":                     "DELETE,INSERT,SELECT,UPDATE",
		"user_settings":                    "DELETE,INSERT,SELECT,UPDATE",
		"ingest_moveback_owed":             "DELETE,INSERT,SELECT,UPDATE",
		"ingest_sweep_watermark":           "INSERT,SELECT,UPDATE",        // advanced by the ingest sweep (migration 0040), never removed
		"fix_markers":                      "INSERT,SELECT",               // append-only: a fix once recorded stays as it was said
		"replay_ledger_set_aside":          "SELECT",                      // kept for the record by a migration; nothing changes it
		"replay_policy_active":             "INSERT,SELECT,UPDATE",        // one row, replaced, never removed
		"replay_policy_versions":           "INSERT,SELECT,UPDATE",        // history of activations (migration 0032), never removed
		"replay_policy_rollback":           "INSERT,SELECT,UPDATE",        // the last rollback allowance (migration 0033), replaced, never removed
		"retention_terms_versions":         "INSERT,SELECT,UPDATE",        // history of retention terms activations (migration 0035), never removed
		"retention_terms_rollback":         "INSERT,SELECT,UPDATE",        // the last retention terms rollback allowance (migration 0035)
		"replay_policy_contents":           "INSERT,SELECT",               // what each version said (migration 0039): recorded once, never changed
		"retention_terms_contents":         "INSERT,SELECT",               // what each retention terms version said (migration 0039)
		"dead_letters_purged":              "INSERT,SELECT",               // append-only (migration 0027); keys go only through quarantine_purged_keys_trim (0028), which records each removal (0030)
		"dead_letters_purged_trims":        "SELECT",                      // written only by quarantine_purged_keys_trim (migration 0030)
		"authz_group_mappings":             "INSERT,SELECT,UPDATE",        // each process's mapping, seen again while it runs (migration 0053), never removed
		"ingest_watchers":                  "DELETE,INSERT,SELECT,UPDATE", // each replica announces, renews and withdraws its watched streams (migration 0056)
	}
	rows, err := db.Pool.Query(context.Background(), `
        SELECT c.relname, p.privilege
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
        CROSS JOIN unnest(ARRAY['SELECT','INSERT','UPDATE','DELETE','TRUNCATE','REFERENCES','TRIGGER']) AS p(privilege)
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND has_table_privilege(c.oid, p.privilege)`)
	require.NoError(t, err)
	got := map[string][]string{}
	var table, priv string
	_, err = pgx.ForEachRow(rows, []any{&table, &priv}, func() error {
		got[table] = append(got[table], priv)
		return nil
	})
	require.NoError(t, err)
	gotJoined := map[string]string{}
	for tbl, ps := range got {
		sort.Strings(ps)
		gotJoined[tbl] = strings.Join(ps, ",")
	}
	var tables []string
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT array_agg(relname::text) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition`).Scan(&tables))
	for _, tbl := range tables {
		assert.Contains(t, want, tbl, "table %s is new: add what the runtime role may do on it to this test", tbl)
	}
	assert.Equal(t, want, gotJoined)
}

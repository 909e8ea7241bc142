// Package migrations holds the database schema as numbered SQL files
// (NNNN_name.up.sql / NNNN_name.down.sql), embedded in the binary and applied
// with jackc/tern. Landed files are never edited; a change is a new file.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable is the table tern records the applied version in.
const VersionTable = "schema_version"

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.(up|down)\.sql$`)

// Migration is one numbered step of the schema.
type Migration struct {
	Number int
	Name   string
	Up     string
	Down   string
}

// All returns the embedded migrations in order. It fails when a number is
// missing, repeated, or has no up file.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	byNum := map[int]*Migration{}
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must be NNNN_name.up.sql or NNNN_name.down.sql", e.Name())
		}
		n, _ := strconv.Atoi(m[1]) // the regexp guarantees four digits
		body, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", e.Name(), err)
		}
		mig := byNum[n]
		if mig == nil {
			mig = &Migration{Number: n, Name: m[2]}
			byNum[n] = mig
		}
		if mig.Name != m[2] {
			return nil, fmt.Errorf("migration %04d has two names: %q and %q", n, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	out := make([]Migration, 0, len(byNum))
	for _, m := range byNum {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	for i, m := range out {
		if m.Number != i+1 {
			return nil, fmt.Errorf("migration %04d is missing (found %04d_%s)", i+1, m.Number, m.Name)
		}
		if m.Up == "" {
			return nil, fmt.Errorf("migration %04d_%s has no up file", m.Number, m.Name)
		}
	}
	return out, nil
}

// Migrate brings the database on conn to the newest schema. tern holds a
// PostgreSQL advisory lock while it works, so replicas starting together
// apply each migration once. Then it fills in what SQL cannot compute,
// and writes again what an earlier release computed otherwise
// (fillMailboxes, which audits what it writes). It returns the version
// reached.
//
// A schema newer than this binary's migrations (Newest), which a later
// release left, is not an error: Migrate runs nothing on it, not even the
// fill (a later release's schema is that release's to complete), and
// returns its version, above Newest. That is what a rollback needs: the
// previous release's `console migrate` runs first, on the schema the newer
// one left, and its serve and worker accept that schema (CheckVersion).
func Migrate(ctx context.Context, conn *pgx.Conn) (version int32, err error) {
	all, err := All()
	if err != nil {
		return 0, err
	}
	newest := int32(len(all))
	// Read before tern, which refuses a version above its migrations.
	if have, err := recordedVersion(ctx, conn); err != nil || have > newest {
		return have, err
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return 0, fmt.Errorf("prepare migrator: %w", err)
	}
	for _, mig := range all {
		m.AppendMigration(fmt.Sprintf("%04d_%s", mig.Number, mig.Name), mig.Up, mig.Down)
	}
	if err := m.Migrate(ctx); err != nil {
		// A newer release migrated between the read above and tern's lock.
		var bad migrate.BadVersionError
		if have, rerr := recordedVersion(ctx, conn); errors.As(err, &bad) && rerr == nil && have > newest {
			return have, nil
		}
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if err := fillMailboxes(ctx, conn); err != nil {
		return 0, err
	}
	v, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// recordedVersion returns the version tern recorded in the database on q, 0 when nothing
// was migrated (no version table).
func recordedVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int32, error) {
	var have int32
	err := q.QueryRow(ctx, selectVersion).Scan(&have)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return have, nil
}

// Newest returns the schema version the embedded migrations reach.
func Newest() (int32, error) {
	all, err := All()
	if err != nil {
		return 0, err
	}
	return int32(len(all)), nil
}

// ErrPending is returned by CheckVersion when the database's schema is older
// than this binary's; the message says how to migrate.
var ErrPending = errors.New("database migrations are pending")

// The version tern recorded. A missing table means nothing was migrated.
const selectVersion = `SELECT version FROM ` + VersionTable

// CheckVersion returns the schema version of the database on q and the
// newest this binary knows. It returns an error wrapping ErrPending when the
// database is older (or empty): the console does not migrate with the
// runtime role; `console migrate` does, as the schema's owner. A newer
// database is not an error: migrations only add, so an older replica keeps
// working during a rolling upgrade.
func CheckVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (have, want int32, err error) {
	if want, err = Newest(); err != nil {
		return 0, 0, err
	}
	if have, err = recordedVersion(ctx, q); err != nil {
		return 0, want, err
	}
	if have < want {
		return have, want, fmt.Errorf("%w: the schema is at version %d and this console needs %d; run `console migrate` with MIGRATE_DATABASE_URL (the role that owns the schema) first", ErrPending, have, want)
	}
	return have, want, nil
}

// ErrPrivileged is returned by CheckRuntimeRole for a role that could change
// the audit log or the schema.
var ErrPrivileged = errors.New("the database role is too powerful for the console")

// What the connected role could do that the runtime role must not: be a
// superuser, own the audit tables, change or empty them, or create objects
// in the schema; or reach a role that can, by SET ROLE. Membership is
// checked with 'MEMBER', not 'USAGE': a NOINHERIT member of the owner uses
// none of its privileges until it runs SET ROLE, and then it may disable
// the audit triggers. The roles it reaches that are superusers, may create
// roles (which, before PostgreSQL 16, may grant themselves any other), or
// own the schema or anything in it, are listed by name.
const selectRolePowers = `
WITH reach AS (
    SELECT m.oid, m.rolname, m.rolsuper, m.rolcreaterole
    FROM pg_roles m
    WHERE m.rolname <> current_user AND pg_has_role(current_user, m.oid, 'MEMBER')
), owners AS (
    SELECT relowner AS oid FROM pg_class WHERE relnamespace = 'public'::regnamespace
    UNION SELECT proowner FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    UNION SELECT nspowner FROM pg_namespace WHERE nspname = 'public'
)
SELECT current_user,
       r.rolsuper,
       r.rolcreaterole,
       c.relowner = r.oid,
       has_table_privilege('audit_log', 'UPDATE') OR has_table_privilege('audit_log', 'DELETE')
           OR has_table_privilege('audit_log', 'TRUNCATE') OR has_table_privilege('audit_log', 'TRIGGER')
           OR has_table_privilege('audit_checkpoints', 'UPDATE') OR has_table_privilege('audit_checkpoints', 'DELETE')
           OR has_table_privilege('audit_checkpoints', 'TRUNCATE') OR has_table_privilege('audit_checkpoints', 'TRIGGER'),
       has_schema_privilege('public', 'CREATE'),
       ARRAY(SELECT rolname FROM reach WHERE rolsuper ORDER BY 1),
       ARRAY(SELECT rolname FROM reach WHERE rolcreaterole AND NOT rolsuper ORDER BY 1),
       ARRAY(SELECT rolname FROM reach WHERE oid IN (SELECT oid FROM owners) AND NOT rolsuper ORDER BY 1)
FROM pg_roles r, pg_class c
WHERE r.rolname = current_user AND c.oid = 'audit_log'::regclass`

// CheckRuntimeRole returns an error wrapping ErrPrivileged, naming the role
// and what it could do, when the role q is connected as could alter the
// audit log or the schema: a superuser, a role that may create roles, the
// tables' owner, a holder of UPDATE, DELETE, TRUNCATE or TRIGGER on the
// audit tables, or of CREATE on the schema, or a member (inheriting or not)
// of a role that is a superuser, may create roles, or owns the schema or
// anything in it. serve and worker refuse to start with such a role
// (docs/access.md, "Database roles").
func CheckRuntimeRole(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	var (
		role                                       string
		super, createRole, owner, change, createOK bool
		superRoles, roleMakers, ownerRoles         []string
	)
	err := q.QueryRow(ctx, selectRolePowers).Scan(&role, &super, &createRole, &owner, &change, &createOK, &superRoles, &roleMakers, &ownerRoles)
	if err != nil {
		return fmt.Errorf("check the database role: %w", err)
	}
	var powers []string
	if super {
		powers = append(powers, "is a superuser")
	}
	if createRole {
		powers = append(powers, "may create roles (and so grant itself the owner's)")
	}
	if owner {
		powers = append(powers, "owns the audit log")
	}
	if change {
		powers = append(powers, "may update, delete, truncate or add triggers to the audit tables")
	}
	if createOK {
		powers = append(powers, "may create objects in schema public")
	}
	for _, m := range []struct {
		roles []string
		what  string
	}{
		{superRoles, "a superuser"},
		{roleMakers, "allowed to create roles"},
		{ownerRoles, "the owner of schema public or of objects in it"},
	} {
		for _, r := range m.roles {
			if super {
				break // a superuser is a member of every role
			}
			powers = append(powers, fmt.Sprintf("is a member of %q, which is %s (SET ROLE reaches it, inherited or not)", r, m.what))
		}
	}
	if len(powers) == 0 {
		return nil
	}
	return fmt.Errorf("%w: role %q %s; connect with a login role that is a member of quarantine_runtime only (DATABASE_URL) and keep the owner for `console migrate` (MIGRATE_DATABASE_URL); see docs/access.md",
		ErrPrivileged, role, strings.Join(powers, ", "))
}

// MigrateTo brings the database on conn to version, up or down (tests of
// what a migration does to existing rows use it).
func MigrateTo(ctx context.Context, conn *pgx.Conn, version int32) error {
	all, err := All()
	if err != nil {
		return err
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return fmt.Errorf("prepare migrator: %w", err)
	}
	for _, mig := range all {
		m.AppendMigration(fmt.Sprintf("%04d_%s", mig.Number, mig.Name), mig.Up, mig.Down)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		return fmt.Errorf("migrate to %d: %w", version, err)
	}
	return nil
}

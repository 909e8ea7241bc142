// Package migrations holds the database schema as numbered SQL files
// (NNNN_name.up.sql / NNNN_name.down.sql), embedded in the binary and applied
// with jackc/tern. Landed files are never edited; a change is a new file.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"
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
// apply each migration once. It returns the version reached.
func Migrate(ctx context.Context, conn *pgx.Conn) (version int32, err error) {
	all, err := All()
	if err != nil {
		return 0, err
	}
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return 0, fmt.Errorf("prepare migrator: %w", err)
	}
	for _, mig := range all {
		m.AppendMigration(fmt.Sprintf("%04d_%s", mig.Number, mig.Name), mig.Up, mig.Down)
	}
	if err := m.Migrate(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	v, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

package migrations_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevDocs19RunbookQueriesRun runs every SQL statement docs/runbook.md
// tells on-call to type (the backticked SELECTs; DELETEs inside a rolled
// back transaction, as the owner the runbook names) against a migrated
// database: a step that fails on the schema is a runbook that fails when
// it is needed.
func TestRevDocs19RunbookQueriesRun(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	raw, err := os.ReadFile("../docs/runbook.md")
	require.NoError(t, err)
	text := string(raw)
	span := regexp.MustCompile("`([^`]+)`")
	stmt := regexp.MustCompile(`(?i)^\s*(SELECT|DELETE)\b`)
	var n int
	for _, m := range span.FindAllStringSubmatchIndex(text, -1) {
		s := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		if !stmt.MatchString(s) || len(s) < 20 {
			continue
		}
		line := 1 + strings.Count(text[:m[0]], "\n")
		// Placeholders the runbook asks the reader to fill.
		s = strings.ReplaceAll(s, "'<failover>'", "'2026-12-01T00:00:00Z'")
		s = strings.ReplaceAll(s, "BETWEEN ...", "BETWEEN '2026-11-30T23:00:00Z' AND '2026-11-30T23:50:00Z'")
		s = strings.TrimSuffix(strings.TrimSpace(s), ";")
		url := db.URL
		if strings.HasPrefix(strings.ToUpper(s), "DELETE") {
			url = db.OwnerURL // "an owner removes them (MIGRATE_DATABASE_URL)"
		}
		n++
		func() {
			conn, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx)
			rows, err := tx.Query(ctx, s)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
			if err != nil {
				t.Errorf("docs/runbook.md:%d: %s\n  fails: %v", line, s, err)
			}
		}()
	}
	require.GreaterOrEqual(t, n, 8, "read too few statements from the runbook")
}

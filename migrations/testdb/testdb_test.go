package testdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestPoolsRunWithoutJIT: a test's pools plan and run statements as the
// console's pools do (app.OpenPool), with JIT off.
func TestPoolsRunWithoutJIT(t *testing.T) {
	db := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, pool := range map[string]*pgxpool.Pool{"Pool": db.Pool, "OwnerPool": db.OwnerPool} {
		var jit string
		if err := pool.QueryRow(ctx, "SELECT current_setting('jit')").Scan(&jit); err != nil {
			t.Fatal(err)
		}
		if jit != "off" {
			t.Errorf("%s: jit = %q, want off", name, jit)
		}
	}
}

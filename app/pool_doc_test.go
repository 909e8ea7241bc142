package app

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestPoolMaxConnsInURLIsHonoured pins README's DATABASE_URL row
// ("pool_max_conns is honoured (default 20)") and OpenPool's own comment
// ("A pool_max_conns in dsn is honoured over pc.MaxConns") to the code.
// pgxpool.ParseConfig deletes pool_max_conns from RuntimeParams once it has
// read it, so OpenPool's check never sees it and always puts its own size.
// (review rev-docs)
func TestPoolMaxConnsInURLIsHonoured(t *testing.T) {
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "3")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, pc := range []PoolConfig{
		{Name: "web", MaxConns: 20, StatementTimeout: time.Second},
		{Name: "workers", MaxConns: 10, StatementTimeout: time.Second},
	} {
		pool, err := OpenPool(ctx, u.String(), 10*time.Second, pc, log)
		if err != nil {
			t.Fatal(err)
		}
		got := pool.Config().MaxConns
		pool.Close()
		if got != 3 {
			t.Errorf("pool %s: MaxConns = %d with pool_max_conns=3 in DATABASE_URL; README says pool_max_conns is honoured", pc.Name, got)
		}
		pool, err = OpenPool(ctx, db.URL, 10*time.Second, pc, log)
		if err != nil {
			t.Fatal(err)
		}
		got = pool.Config().MaxConns
		pool.Close()
		if got != pc.MaxConns {
			t.Errorf("pool %s: MaxConns = %d without pool_max_conns in DATABASE_URL, want the pool's own %d", pc.Name, got, pc.MaxConns)
		}
	}
}

// TestPoolAsksForServerKeepalives: a session of any pool asks the server to
// probe its TCP connection, so that a console whose host vanished lets go
// of what its sessions hold (the keepers' lock) within minutes, not the
// operating system's two hours.
func TestPoolAsksForServerKeepalives(t *testing.T) {
	db := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := OpenPool(ctx, db.URL, 10*time.Second, PoolConfig{Name: "workers", MaxConns: 2, StatementTimeout: time.Second},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for setting, want := range map[string]string{"tcp_keepalives_idle": "60", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "6"} {
		var got string
		if err := pool.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

// TestEveryPoolRunsWithoutJIT: every pool the console and `console worker`
// open connects with JIT off. With it on, the judging read of a selection
// of thousands of dead letters spent 7.9 s compiling (557 functions) for a
// statement that ran in a tenth of a second, and a generic plan's cost over
// a month of partitions passes jit_above_cost on every page.
func TestEveryPoolRunsWithoutJIT(t *testing.T) {
	db := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, pc := range []PoolConfig{
		{Name: "web", MaxConns: 20, StatementTimeout: time.Second, GenericPlans: true},
		backgroundPool(Config{}),
		workerPool(WorkersConfig{}),
		{Name: "demo"},
	} {
		pool, err := OpenPool(ctx, db.URL, 10*time.Second, pc, log)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = pool.QueryRow(ctx, "SELECT current_setting('jit')").Scan(&jit)
		pool.Close()
		if err != nil {
			t.Fatal(err)
		}
		if jit != "off" {
			t.Errorf("pool %s: jit = %q, want off", pc.Name, jit)
		}
	}
}

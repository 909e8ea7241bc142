package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/migrations"
)

// PoolConfig is how one connection pool behaves.
type PoolConfig struct {
	// Name says what the pool is for (application_name "quarantine-<name>").
	Name string
	// MaxConns is the pool size when the URL has no pool_max_conns; 0 keeps
	// pgx's default.
	MaxConns int32
	// MinConns is the least size the pool's users can work with (the
	// connections they hold for good and one for each part that works at
	// once; 0: no floor), and MinOf says what it is made of. A
	// pool_max_conns below it is refused: the parts would wait on each
	// other for ever, while the process looked ready.
	MinConns int32
	MinOf    string
	// StatementTimeout ends any statement running longer (0: no limit). It
	// is a server setting of every connection, so a runaway query cannot
	// hold a connection, or the audit append lock, for long.
	StatementTimeout time.Duration
	// Tracer, when not nil, sees every statement of the pool (tests count
	// a page's round trips with it).
	Tracer pgx.QueryTracer
	// GenericPlans plans each prepared statement once per connection
	// (plan_cache_mode force_generic_plan): partitions are then pruned when
	// the statement runs. PostgreSQL's default keeps planning a statement
	// on dead_letters with its values (a custom plan) whenever the generic
	// plan looks dearer, which it always does across a month of daily
	// partitions; planning a page's statements over every partition cost
	// 10-20 ms a request. A statement that needs its values planned (a text
	// search, whose plan depends on how common its words are) is sent as a
	// simple query, which is planned each time whatever this says.
	GenericPlans bool
}

// setsMaxConns reports whether dsn (a URL or keyword/value string) names
// pool_max_conns. pgxpool.ParseConfig takes the setting out of what it
// returns, so it is asked of the connection settings as parsed without it.
func setsMaxConns(dsn string) bool {
	cc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	_, set := cc.RuntimeParams["pool_max_conns"]
	return set
}

// checkMaxConns refuses a pool_max_conns in dsn below pc.MinConns; the
// error names the setting, its value and the least this pool needs, and
// why. pool_max_conns sizes every pool of the process (OpenPool), so the
// least is the process's.
func checkMaxConns(dsn string, pc PoolConfig) error {
	if pc.MinConns <= 0 || !setsMaxConns(dsn) {
		return nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if cfg.MaxConns >= pc.MinConns {
		return nil
	}
	return fmt.Errorf("DATABASE_URL: pool_max_conns=%d is below %d, the least this process needs: it sizes every pool of the process, "+
		"and the %s pool needs %s; raise it to %d or more, or remove it to keep each pool's own size",
		cfg.MaxConns, pc.MinConns, pc.Name, pc.MinOf, pc.MinConns)
}

// serverKeepalives are the TCP keepalive settings every session asks the
// server for: probe after 60 s without traffic, every 10 s, give up after
// 6 unanswered.
var serverKeepalives = map[string]string{"tcp_keepalives_idle": "60", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "6"}

// idleInTransactionTimeout ends a session that leaves a transaction open
// and idle this long: a bug or a stuck client must not keep the audit
// chain's append lock.
const idleInTransactionTimeout = time.Minute

// SearchPath is the only schema every connection of the console names
// tables in: the schema's own, where the migrations put them. PostgreSQL's
// default, "$user", public, would look first in a schema named after the
// connected role, which a role with CREATE on the database may make: an
// audit_log of its own there (a view whose trigger drops or rewrites rows
// and seals them again) would take every append the audit package makes,
// while public.audit_log, its guards and its chain, saw none of them. A
// search_path in DATABASE_URL is overridden: the console supports no other.
const SearchPath = "public"

// Connect opens one connection to dsn (the CLI's, and the migrations'),
// naming tables in SearchPath only, as OpenPool's do.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = SearchPath
	return pgx.ConnectConfig(ctx, cfg)
}

// OpenPool connects to PostgreSQL, waiting up to wait for it to answer. A
// pool_max_conns in dsn is honoured over pc.MaxConns, and refused below
// pc.MinConns before anything connects.
func OpenPool(ctx context.Context, dsn string, wait time.Duration, pc PoolConfig, log *slog.Logger) (*pgxpool.Pool, error) {
	if err := checkMaxConns(dsn, pc); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if pc.MaxConns > 0 && !setsMaxConns(dsn) {
		cfg.MaxConns = pc.MaxConns
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = SearchPath
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(pc.StatementTimeout.Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleInTransactionTimeout.Milliseconds(), 10)
	// A console that vanishes (its host lost, not its process ended) would
	// keep what its sessions hold, the keepers' session lock first, until
	// the server's operating system gives up on the connection: two hours
	// by default. These make the server find out within about two minutes.
	for k, v := range serverKeepalives {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	if pc.Name != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "quarantine-" + pc.Name
	}
	// JIT is off in every pool, as in the tests' (migrations/testdb): the
	// console runs no statement that reads enough rows for compiled code to
	// win back its compiling, which comes out of the statement timeout. A
	// generic plan's cost counts every partition and passes jit_above_cost:
	// compiling the plan of a detail page's replay chain took 3.6 s. The
	// judging read of a selection of a few hundred dead letters or more
	// (replay's CreateDrafts) passes jit_optimize_above_cost: on a pool with
	// JIT on it spent 7.9 s compiling 557 functions, then ran in 0.1 s.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	if pc.GenericPlans {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	if pc.Tracer != nil {
		cfg.ConnConfig.Tracer = pc.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err == nil {
			return pool, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			pool.Close()
			return nil, fmt.Errorf("PostgreSQL at DATABASE_URL did not answer: %w", err)
		}
		log.Warn("waiting for PostgreSQL", "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// CheckDatabase refuses a database whose schema is behind this binary
// (serve and worker do not migrate: `console migrate` does, as the owner)
// and a role that could alter the audit log or the schema.
func CheckDatabase(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	have, want, err := migrations.CheckVersion(ctx, pool)
	if err != nil {
		return err
	}
	if have > want {
		log.Warn("the database schema is newer than this console; continuing (migrations only add)", "schema", have, "console", want)
	}
	if err := migrations.CheckRuntimeRole(ctx, pool); err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	log.Info("database schema ready", "version", have)
	return nil
}

// MigrateAsOwner applies the migrations on one connection to dsn, which
// must be the schema's owner (MIGRATE_DATABASE_URL). It returns the version
// reached: above migrations.Newest for a schema a newer release left, on
// which it runs nothing (migrations.Migrate).
func MigrateAsOwner(ctx context.Context, dsn string) (int32, error) {
	conn, err := Connect(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("connect to MIGRATE_DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	return migrations.Migrate(ctx, conn)
}

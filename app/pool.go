package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine/migrations"
)

// OpenPool connects to PostgreSQL, waiting up to wait for it to answer. A
// pool_max_conns in dsn is honoured; otherwise the pool holds at least 20.
func OpenPool(ctx context.Context, dsn string, wait time.Duration, log *slog.Logger) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if _, set := pc.ConnConfig.RuntimeParams["pool_max_conns"]; !set && pc.MaxConns < 20 {
		pc.MaxConns = 20
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
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

// Migrate brings the schema up to date (under an advisory lock, so
// replicas starting together take turns).
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	v, err := migrations.Migrate(ctx, conn.Conn())
	if err != nil {
		return err
	}
	log.Info("database schema ready", "version", v)
	return nil
}

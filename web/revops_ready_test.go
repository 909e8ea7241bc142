package web_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestBusyWebPoolIsNotPostgresDown (review rev-ops): /readyz pings
// PostgreSQL through the web pool (web/server.go readyz: Pool.Ping, which
// first acquires one of its 20 connections). When slow pages hold every
// connection (an export, a heavy filter, a burst of people during an
// incident), the ping waits out its 2 s and the replica answers 503
// "postgresql: not answering" and logs "not ready: PostgreSQL" while
// PostgreSQL answers at once. The load balancer takes the busiest replicas
// out, moving their load onto the others, and on-call is sent to a
// database that is fine.
func TestBusyWebPoolIsNotPostgresDown(t *testing.T) {
	t.Parallel()
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var held []*pgxpool.Conn
	for range c.Pool.Config().MaxConns {
		conn, err := c.Pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, conn)
	}
	defer func() {
		for _, conn := range held {
			conn.Release()
		}
	}()
	var one int
	require.NoError(t, c.DB.Pool.QueryRow(ctx, `SELECT 1`).Scan(&one), "PostgreSQL answers")

	code, problems := ready(t, c)
	assert.Equal(t, http.StatusOK, code, "%v", problems)
	assert.NotContains(t, problems, "postgresql: not answering")
}

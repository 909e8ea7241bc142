package web_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestReadyzWhileThePoolIsFullOpensBoundedConnections (review rev-fixes2):
// /readyz is public and unauthenticated, and while every connection of the
// web pool is lent out (slow pages, exports, a burst of people) each probe
// opens a PostgreSQL connection of its own (web/server.go pingPostgres),
// with nothing bounding how many at once. Probes from every load balancer
// node and kubelet, or anyone who can reach the port, then open as many
// sessions as they send requests, on top of every replica's pools:
// max_connections (README sizes the pools under it) is reached and
// ingest, the keepers and the other replicas cannot connect. Here 50
// concurrent probes open 50 sessions; one probe's connection at a time
// (or sharing its answer) would open a handful.
func TestReadyzWhileThePoolIsFullOpensBoundedConnections(t *testing.T) {
	t.Parallel()
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	db := c.Pool.Config().ConnConfig.Database
	sessions := func() int64 {
		var n int64
		require.NoError(t, c.DB.Pool.QueryRow(ctx, `SELECT sessions FROM pg_stat_database WHERE datname = $1`, db).Scan(&n))
		return n
	}
	before := sessions()

	const probes = 50
	var wg sync.WaitGroup
	codes := make([]int, probes)
	for i := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(c.URL() + "/readyz")
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	// A backend counts its session when it ends: wait until the probes'
	// sessions are counted, or 5 s for them (a bounded fix opens few).
	var opened int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if opened = sessions() - before; opened >= probes {
			break
		}
	}
	for _, code := range codes {
		assert.Equal(t, http.StatusOK, code)
	}
	assert.LessOrEqual(t, opened, int64(5), "PostgreSQL sessions opened by %d concurrent /readyz probes while the web pool is full", probes)
}

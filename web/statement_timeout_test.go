package web_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStatementTimeoutSaysWhatToDo: a page whose statement runs past the
// web pool's statement_timeout (here 500 ms, the dead letters held by a
// lock) answers 503 with what to do, not a 500 that says nothing.
func TestStatementTimeoutSaysWhatToDo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) { c.StatementTimeout = 500 * time.Millisecond }})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "slow-1"})
	require.Equal(t, http.StatusOK, b.Do(t, oncall, "GET", "/deadletters", nil, nil).Status)

	ctx := context.Background()
	tx, err := b.DB.OwnerPool.BeginTx(ctx, pgx.TxOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(ctx)) }()
	_, err = tx.Exec(ctx, `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	resp := b.Do(t, oncall, "GET", "/deadletters", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.Status)
	assert.Contains(t, resp.Body, "The database took too long for this")
	assert.Contains(t, resp.Body, "Narrow the selection")
}

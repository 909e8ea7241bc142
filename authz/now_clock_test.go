package authz

import (
	"context"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNowIsTheDatabasesClockAsTheSessionReadIt (review revclock18b): the
// dashboard's last hour and chart, the stale alarm, and the lists' "last
// 15 minutes" compare "now" with times the database or NATS dated. Taken
// from the console's clock, a console three hours off left a current flood
// out of "last hour" and of the list's preset, and kept the stale alarm
// off. Now is the database's clock as the request's session read it, moved
// on by this process's clock; this process's clock without a session read.
func TestNowIsTheDatabasesClockAsTheSessionReadIt(t *testing.T) {
	t.Parallel()
	assert.WithinDuration(t, time.Now(), Now(context.Background()), time.Second, "no session read: this process's clock")

	// The database's clock three hours behind this console's (a console
	// whose clock runs ahead), as a session read found it a moment ago.
	db := time.Now().Add(-3 * time.Hour)
	skewed := context.WithValue(context.Background(), sessionReadKey{}, &sessionRead{dbNow: db, local: time.Now()})
	assert.WithinDuration(t, db, Now(skewed), time.Second, "the database's clock, moved on")

	// A real session read carries the database's clock.
	b := setupLogin(t)
	b.signIn(t)
	rd := &sessionRead{}
	ctx := context.WithValue(context.Background(), sessionReadKey{}, rd)
	_, found, err := b.login.sessions.Store.(scs.CtxStore).FindCtx(ctx, b.browserToken(t))
	require.NoError(t, err)
	require.True(t, found)
	require.False(t, rd.dbNow.IsZero(), "the session read took the database's clock")
	var dbNow time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow))
	assert.WithinDuration(t, dbNow, Now(ctx), time.Second)
}

package authz

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevGov18WorkerBehindTheDatabaseClockCountsALapsedEntry (review
// revgov18): the sibling, for a person's rights, of
// TestRevGov17FastConsoleApprovalOutlivesItsExpiry. A directory entry is
// dated by the database's clock (seen_at = now()), and groups older than a
// session lifetime give nothing to a check made when nobody is signed in
// (docs/access.md: "nor people last seen longer ago than a session lives
// (SESSION_LIFETIME): their groups give no right anywhere"). Authority
// measures that age on the worker's own clock: a worker whose clock runs
// two hours behind the database's counts an approver's groups, last
// confirmed by the provider two hours ago by the database's clock (MaxAge
// one hour), as fresh, and publishes on their approval. Approvals are
// judged at the later of the two clocks (Service.judgedAt) precisely so
// that a skewed process can only take rights away; the directory's age is
// not.
func TestRevGov18WorkerBehindTheDatabaseClockCountsALapsedEntry(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	access := newAccess(t, db, GroupMap{Prefix: "quarantine:"})
	dir := NewDirectory(db.Pool)
	approver := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ann", Email: "ann@example.com", EmailVerified: true},
		Groups: []string{"quarantine:acme:approver"}}
	require.NoError(t, dir.Remember(ctx, approver))
	// Last seen two hours ago, by the database's clock: past MaxAge.
	_, err := db.Pool.Exec(ctx, `UPDATE user_directory SET seen_at = now() - interval '2 hours'`)
	require.NoError(t, err)

	right := Authority{Access: access, Directory: dir, MaxAge: time.Hour}
	ok, err := right.StillAllowed(ctx, approver.Actor, "acme", ReplayObject("manual"), ActApprove)
	require.NoError(t, err)
	require.False(t, ok, "a worker whose clock is right: groups two hours old give nothing")

	behind := Authority{Access: access, Directory: dir, MaxAge: time.Hour,
		Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }} // a worker host two hours behind the database
	ok, until, err := behind.StillAllowedUntil(ctx, approver.Actor, "acme", ReplayObject("manual"), ActApprove)
	require.NoError(t, err)
	assert.False(t, ok,
		"a worker whose clock runs two hours behind the database's counts groups the provider last confirmed two hours ago (MaxAge 1h) as fresh, until %s on its clock",
		until)
}

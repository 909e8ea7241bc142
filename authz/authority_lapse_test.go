package authz

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestStillAllowedUntilLapsesOnlyWhatRestsOnTheProvider: a yes bound to the identity itself (user:<issuer>|<subject>)
// does not rest on the provider's word and does not lapse with the
// entry's age, so StillAllowedUntil gives no lapse time for it (the
// worker would release such a claim at SeenAt+MaxAge for nothing, saying
// "the rights of the request's people changed"). A yes from groups lapses
// at SeenAt+MaxAge, and at that instant it is no longer a yes (the
// worker's rightsLapsed counts the instant itself as lapsed).
func TestStillAllowedUntilLapsesOnlyWhatRestsOnTheProvider(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	access := newAccess(t, db, GroupMap{Prefix: "quarantine:"})
	dir := NewDirectory(db.Pool)
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin"}}
	byIdentity := User{Actor: quarantine.Actor{Issuer: "i", Subject: "u"}}
	byGroup := User{Actor: quarantine.Actor{Issuer: "i", Subject: "g"}, Groups: []string{"quarantine:acme:approver"}}
	_, err := NewBindings(db.Pool).Add(ctx, BindingInput{Subject: "i|u", Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	require.NoError(t, access.Reload())
	for _, u := range []User{byIdentity, byGroup} {
		require.NoError(t, dir.Remember(ctx, u))
	}
	e, err := dir.Lookup(ctx, "i", "u")
	require.NoError(t, err)
	auth := Authority{Access: access, Directory: dir, MaxAge: time.Hour, Now: func() time.Time { return e.SeenAt.Add(time.Minute) }}
	ok, until, err := auth.StillAllowedUntil(ctx, byIdentity.Actor, "acme", ReplayObject("manual"), ActApprove)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, until.IsZero(), "a binding to the identity does not lapse with the entry's age; got %s", until)

	g, err := dir.Lookup(ctx, "i", "g")
	require.NoError(t, err)
	auth.Now = func() time.Time { return g.SeenAt.Add(time.Minute) }
	ok, until, err = auth.StillAllowedUntil(ctx, byGroup.Actor, "acme", ReplayObject("manual"), ActApprove)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, until.Equal(g.SeenAt.Add(time.Hour)), "a yes from groups lapses when the entry is MaxAge old: %s", until)

	auth.Now = func() time.Time { return g.SeenAt.Add(time.Hour) } // exactly MaxAge old
	ok, until, err = auth.StillAllowedUntil(ctx, byGroup.Actor, "acme", ReplayObject("manual"), ActApprove)
	require.NoError(t, err)
	assert.False(t, ok && !auth.Clock().Before(until), "yes, lapsing at %s, which is now: a yes that has already lapsed", until)
}

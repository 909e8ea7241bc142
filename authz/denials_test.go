package authz_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
)

// TestCrossSiteDenialsAllow: a burst of 10 per person, then one a minute;
// the first written after a refusal counts the ones not written; a row
// that spends the allowance says so.
func TestCrossSiteDenialsAllow(t *testing.T) {
	d := authz.NewCrossSiteDenials(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		a := d.Allow("iss alice", now)
		assert.True(t, a.Write, "denial %d", i+1)
		assert.Zero(t, a.Unwritten)
		assert.Equal(t, i == 9, a.Spent, "denial %d: only the tenth spends the burst", i+1)
	}
	for range 3 {
		assert.False(t, d.Allow("iss alice", now).Write, "over the burst")
	}
	assert.True(t, d.Allow("iss bob", now).Write, "per person")
	a := d.Allow("iss alice", now.Add(time.Minute))
	assert.True(t, a.Write, "a minute later")
	assert.Equal(t, int64(3), a.Unwritten)
	assert.True(t, a.Spent, "the minute's one row spends it again")
	a = d.Allow("iss alice", now.Add(time.Minute))
	assert.False(t, a.Write)
	assert.Zero(t, a.Unwritten)
}

// TestCrossSiteDenialsRefusedBySession: a session remembered as signing in
// a person over the limit is refused without being read, and the refusal
// counts for the person's next row; a session never remembered, one
// remembered a minute ago or longer (it may have ended since), or of a
// person with room left is the caller's to read.
func TestCrossSiteDenialsRefusedBySession(t *testing.T) {
	d := authz.NewCrossSiteDenials(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	d.Remember("s1", "iss alice", now, time.Time{})
	assert.False(t, d.Refused("s1", now), "alice has room")
	for range 10 {
		assert.True(t, d.Allow("iss alice", now).Write)
	}
	assert.True(t, d.Refused("s1", now.Add(59*time.Second)), "over the limit, remembered")
	assert.True(t, d.Refused("s1", now.Add(59*time.Second)))
	assert.False(t, d.Refused("s2", now), "a session never remembered")
	assert.False(t, d.Refused("s1", now.Add(time.Minute)), "remembered too long ago: read it again")

	d.Remember("s1", "iss alice", now.Add(time.Minute), time.Time{})
	a := d.Allow("iss alice", now.Add(time.Minute))
	assert.True(t, a.Write, "a minute later there is room for one")
	assert.Equal(t, int64(2), a.Unwritten, "the refusals without a read are counted")
	assert.True(t, d.Refused("s1", now.Add(time.Minute)))
}

// TestCrossSiteDenialsForgetEndedSessions: a session that ended (Forget:
// signed out, ended at a refresh, found to sign nobody in) or reached its
// own end (until), or whose person was signed out everywhere
// (ForgetPerson), is not answered for from memory: the caller reads it
// and finds nobody. A read from before the end, remembered after it (a
// race), is not remembered; a session signed in after it is.
func TestCrossSiteDenialsForgetEndedSessions(t *testing.T) {
	d := authz.NewCrossSiteDenials(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for range 10 {
		require.True(t, d.Allow("iss alice", now).Write)
	}
	d.Remember("s1", "iss alice", now, time.Time{})
	require.True(t, d.Refused("s1", now), "over the limit, remembered")

	d.Forget("s1", now.Add(time.Second))
	assert.False(t, d.Refused("s1", now.Add(time.Second)), "signed out")
	d.Remember("s1", "iss alice", now, time.Time{}) // read before the sign-out, told after it
	assert.False(t, d.Refused("s1", now.Add(2*time.Second)), "a read from before its end is not remembered")

	d.Remember("s2", "iss alice", now, now.Add(30*time.Second))
	assert.True(t, d.Refused("s2", now.Add(29*time.Second)))
	assert.False(t, d.Refused("s2", now.Add(30*time.Second)), "past its idle deadline or its sign-in's end")

	d.Remember("s3", "iss alice", now, time.Time{})
	d.Remember("b1", "iss bob", now, time.Time{})
	revoked := now.Add(5 * time.Second)
	d.ForgetPerson("iss alice", revoked)
	assert.False(t, d.Refused("s3", revoked), "signed out everywhere")
	d.Remember("s4", "iss alice", revoked, time.Time{}) // read as the revocation committed
	assert.False(t, d.Refused("s4", revoked.Add(time.Second)), "a read from before the revocation is not remembered")
	d.Remember("s5", "iss alice", revoked.Add(time.Second), time.Time{}) // signed in again
	assert.True(t, d.Refused("s5", revoked.Add(time.Second)), "a session signed in after it is")
	for range 10 {
		d.Allow("iss bob", now)
	}
	assert.True(t, d.Refused("b1", revoked), "another person's session is kept")
}

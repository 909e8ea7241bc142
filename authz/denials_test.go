package authz_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/authz"
)

// TestCrossSiteDenialsAllow: a burst of 10 per person, then one a minute;
// the first written after a refusal counts the ones not written.
func TestCrossSiteDenialsAllow(t *testing.T) {
	d := authz.NewCrossSiteDenials(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		ok, unwritten := d.Allow("iss alice", now)
		assert.True(t, ok, "denial %d", i+1)
		assert.Zero(t, unwritten)
	}
	for range 3 {
		ok, _ := d.Allow("iss alice", now)
		assert.False(t, ok, "over the burst")
	}
	ok, _ := d.Allow("iss bob", now)
	assert.True(t, ok, "per person")
	ok, unwritten := d.Allow("iss alice", now.Add(time.Minute))
	assert.True(t, ok, "a minute later")
	assert.Equal(t, int64(3), unwritten)
	ok, unwritten = d.Allow("iss alice", now.Add(time.Minute))
	assert.False(t, ok)
	assert.Zero(t, unwritten)
}

// TestCrossSiteDenialsRefusedBySession: a session remembered as signing in
// a person over the limit is refused without being read, and the refusal
// counts for the person's next row; a session never remembered, one
// remembered a minute ago or longer (it may have ended since), or of a
// person with room left is the caller's to read.
func TestCrossSiteDenialsRefusedBySession(t *testing.T) {
	d := authz.NewCrossSiteDenials(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	d.Remember("s1", "iss alice", now)
	assert.False(t, d.Refused("s1", now), "alice has room")
	for range 10 {
		ok, _ := d.Allow("iss alice", now)
		assert.True(t, ok)
	}
	assert.True(t, d.Refused("s1", now.Add(59*time.Second)), "over the limit, remembered")
	assert.True(t, d.Refused("s1", now.Add(59*time.Second)))
	assert.False(t, d.Refused("s2", now), "a session never remembered")
	assert.False(t, d.Refused("s1", now.Add(time.Minute)), "remembered too long ago: read it again")

	d.Remember("s1", "iss alice", now.Add(time.Minute))
	ok, unwritten := d.Allow("iss alice", now.Add(time.Minute))
	assert.True(t, ok, "a minute later there is room for one")
	assert.Equal(t, int64(2), unwritten, "the refusals without a read are counted")
	assert.True(t, d.Refused("s1", now.Add(time.Minute)))
}

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

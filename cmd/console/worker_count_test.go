package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
)

// TestReplayWorkersZeroOnlyForServe: REPLAY_WORKERS=0 is serve's setting
// when console worker processes replay instead; a worker refuses it,
// saying why, and takes any number from 1. (fixdocs10)
func TestReplayWorkersZeroOnlyForServe(t *testing.T) {
	t.Parallel()
	parse := func(separate bool, workers string) (app.ReplayConfig, error) {
		var c app.ReplayConfig
		s := newSettings("worker", env(map[string]string{"REPLAY_WORKERS": workers, "POLICY_FILE": devPolicyFile}), io.Discard)
		s.replay(&c, 4, "", separate)
		return c, s.parse(nil)
	}
	t.Run("WorkerZeroRefused", func(t *testing.T) {
		_, err := parse(true, "0")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "REPLAY_WORKERS")
		assert.Contains(t, err.Error(), "set it for serve alone")
	})
	t.Run("WorkerOne", func(t *testing.T) {
		c, err := parse(true, "1")
		require.NoError(t, err)
		assert.Equal(t, 1, c.Workers)
	})
	t.Run("WorkerUnset", func(t *testing.T) {
		c, err := parse(true, "")
		require.NoError(t, err)
		assert.Equal(t, 4, c.Workers)
	})
	t.Run("ServeZero", func(t *testing.T) {
		c, err := parse(false, "0")
		require.NoError(t, err)
		assert.Equal(t, 0, c.Workers)
	})
}

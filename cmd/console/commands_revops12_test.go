package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRevOps12VersionRefusesWhatItDoesNotTake (review revops12): README
// says "A command line a command does not take (an unknown command or
// flag, a flag without its value, a stray argument) prints the usage and
// exits 2", and every other command does so; `console version` takes no
// argument and no flag but ignores whatever follows it and exits 0
// (runCommand's "version" case never looks at rest). A script that runs
// `console version --json`, or a typo like `console version serve`, gets
// a success and a line it did not ask for.
func TestRevOps12VersionRefusesWhatItDoesNotTake(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--json"}, {"serve"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"console", "version"}, args...), env(nil), &stdout, &stderr)
		status := 0
		if err != nil {
			status = exitCode(err)
		}
		assert.Equal(t, 2, status, "console version %v: exit status %d, stdout %q", args, status, stdout.String())
	}
}

package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34AuditVerifySettingMistakesAreNotTampering: "console audit
// verify" exits 1 only when the log or the export was read and does not
// verify (page for tampering), 4 when the check could not be made. A
// setting it could not take (no DATABASE_URL, a malformed AUDIT_ANCHORS,
// a checkpoint interval it refuses) exited 1: a cron wrapper that lost its
// DATABASE_URL paged security for tampering. They exit 4; a command line
// it does not take (--file with --anchor) exits 2, as usage does.
func TestRev34AuditVerifySettingMistakesAreNotTampering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"no DATABASE_URL", nil, map[string]string{}, exitUnchecked},
		{"a malformed anchor", nil, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x", "AUDIT_ANCHORS": "12:zz"}, exitUnchecked},
		{"an interval refused", nil, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x", "AUDIT_CHECKPOINT_INTERVAL": "5"}, exitUnchecked},
		{"an unreachable database", nil, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x?connect_timeout=1"}, exitUnchecked},
		{"--file with --anchor", []string{"--file", "export.csv", "--anchor", "1:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x"}, 2},
		{"a flag it does not know", []string{"--no-such-flag"}, map[string]string{}, 2},
	} {
		err := run(ctx, append([]string{"console", "audit", "verify"}, tc.args...), env(tc.env), io.Discard, io.Discard)
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.want, exitCode(err), "%s: %v", tc.name, err)
	}
}

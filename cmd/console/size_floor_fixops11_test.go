package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixOps11SizeAndAgeFloorsAtParse: a size setting refuses a value
// other than 0 below its floor, asking for a unit when none was given
// (DLQ_MAX_BYTES=10 meant 10GiB and made a stream that keeps no dead
// letter; REPLAY_MAX_PAYLOAD=64 meant 64KiB), through the one size
// binder; and DLQ_MAX_AGE is 0 or at least 15m.
func TestFixOps11SizeAndAgeFloorsAtParse(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c",
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}
	parse := func(k, v string) error {
		e := map[string]string{k: v}
		for k, v := range base {
			e[k] = v
		}
		_, err := parseServe(nil, env(e), io.Discard)
		return err
	}
	for _, ok := range [][2]string{{"DLQ_MAX_BYTES", "0"}, {"DLQ_MAX_BYTES", "1MiB"}, {"DLQ_MAX_BYTES", "10GiB"}, {"DLQ_MAX_BYTES", "1048576"},
		{"REPLAY_MAX_PAYLOAD", "0"}, {"REPLAY_MAX_PAYLOAD", "65536"}, {"REPLAY_MAX_PAYLOAD", "512KiB"},
		{"DLQ_MAX_AGE", "0"}, {"DLQ_MAX_AGE", "15m"}, {"DLQ_MAX_AGE", "720h"}} {
		assert.NoError(t, parse(ok[0], ok[1]), "%s=%s", ok[0], ok[1])
	}
	for _, tc := range []struct{ key, value, want string }{
		{"DLQ_MAX_BYTES", "10", `DLQ_MAX_BYTES (--dlq-max-bytes) "10": must be 0 or at least 1MiB; a number without a unit is bytes: give the unit, like 10KiB, 10MiB or 10GiB`},
		{"DLQ_MAX_BYTES", " 50 ", `a number without a unit is bytes: give the unit, like 50KiB, 50MiB or 50GiB`},
		{"DLQ_MAX_BYTES", "512KiB", `DLQ_MAX_BYTES (--dlq-max-bytes) "512KiB": must be 0 or at least 1MiB`},
		{"DLQ_MAX_BYTES", "10B", `DLQ_MAX_BYTES (--dlq-max-bytes) "10B": must be 0 or at least 1MiB`},
		{"REPLAY_MAX_PAYLOAD", "64", `REPLAY_MAX_PAYLOAD (--replay-max-payload) "64": must be 0 or at least 1KiB; a number without a unit is bytes`},
		{"DLQ_MAX_AGE", "10m", "DLQ_MAX_AGE (--dlq-max-age) 10m: must be 0 or at least 15m"},
	} {
		err := parse(tc.key, tc.value)
		require.Error(t, err, "%s=%s", tc.key, tc.value)
		assert.Contains(t, err.Error(), tc.want)
		if tc.value == "512KiB" || tc.value == "10B" {
			assert.NotContains(t, err.Error(), "without a unit", "a unit was given")
		}
	}
}

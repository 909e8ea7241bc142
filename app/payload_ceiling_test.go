package app

import "testing"

// TestPayloadCeiling: REPLAY_MAX_PAYLOAD lowers the size replays may have
// below the server's max_payload, never raises it; 0 leaves the server's.
func TestPayloadCeiling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		server, ceiling, out int64
	}{
		{"NoCeiling", 1 << 20, 0, 1 << 20},
		{"Lower", 1 << 20, 512 << 10, 512 << 10},
		{"HigherIsIgnored", 1 << 20, 8 << 20, 1 << 20},
		{"ServerUnknown", 0, 512 << 10, 512 << 10},
	} {
		if got := payloadCeiling(tc.server, tc.ceiling); got != tc.out {
			t.Errorf("%s: payloadCeiling(%d, %d) = %d, want %d", tc.name, tc.server, tc.ceiling, got, tc.out)
		}
	}
}

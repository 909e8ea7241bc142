package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestParseObject: the Object filter reads an object as the log shows it,
// as the console's pages name it, or an id alone, and refuses (invalid,
// so the page says so) what it cannot read.
func TestParseObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, typ, id string
		typed, bad  bool
	}{
		{"", "", "", false, false},
		{"83", "", "83", false, false},
		{"#83", "", "83", false, false},
		{" # 83 ", "", "83", false, false},
		{"dead_letter 83", "dead_letter", "83", true, false},
		{"dead_letter:83", "dead_letter", "83", true, false},
		{"route GET /policy", "route", "GET /policy", true, false},
		{"replay_request #4", "replay_request", "4", true, false},
		{"replay_request: #4", "replay_request", "4", true, false},
		{"replay_request:#4", "replay_request", "4", true, false},
		{"replay_request # 4", "replay_request", "4", true, false},
		{"Dead letter #138", "dead_letter", "138", true, false},
		{"Replay request #4", "replay_request", "4", true, false},
		{"route GET /x#y", "route", "GET /x#y", true, false},   // a # inside an id is the id's
		{"Order 83", "", "Order 83", false, false},             // no type: the whole text is an id
		{"Dead letter 138", "dead_letter", "138", true, false}, // a label of several words, no '#'
		{"replay request #4", "replay_request", "4", true, false},
		{"replay  request 4", "replay_request", "4", true, false},
		{"#", "", "", false, true},
		{"replay_request #", "", "", false, true},
		{"Dead letter #", "", "", false, true},
		{"(4) #4", "", "", false, true},
		{"Dead-letter #4", "", "", false, true},
	} {
		typ, id, typed, err := audit.ParseObject(tc.in)
		if tc.bad {
			require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%q: %v", tc.in, err)
			require.Error(t, (&audit.Filter{Object: tc.in}).Validate(), tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, [3]any{tc.typ, tc.id, tc.typed}, [3]any{typ, id, typed}, tc.in)
	}
}

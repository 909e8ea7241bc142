package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestConfirmSaysOwnFixMarkerNeedsAnApprover: the confirm page says why a
// request that its class lets go at once waits for an approver: the fix
// marker that lets its item type replay was recorded by the requester.
func TestConfirmSaysOwnFixMarkerNeedsAnApprover(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `waits for 1 approver, not you: the fix marker that lets item type "search.index_update" replay was recorded by the requester (you)`,
		onSubmitText(replay.OnSubmit{Approvals: 1, SelfFixed: "search.index_update"}))
	assert.Equal(t, "waits for 1 approver, not you", onSubmitText(replay.OnSubmit{Approvals: 1}))
}

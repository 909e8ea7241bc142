package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx9PolicyCardIgnoresErrorClassFloor: the dead letter page's
// "Replay policy" card names the class its replay is judged at. A
// search.index_update dead letter (rebuildable by item type) whose error
// class is "policy" (min_class = "revalidate" in dev/policy.toml) replays
// as revalidate: the confirm page groups it so and it waits for one
// approver. The card must not tell the on-call "rebuildable" (one
// operator alone).
func TestRevUx9PolicyCardIgnoresErrorClassFloor(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "pol-1",
		Class: "policy", Principal: "user:7", Error: "not allowed", Payload: []byte(`{"doc":1}`)})

	// What a replay of it is judged at: the confirm page's group.
	confirm := b.Do(t, oncall, "GET", draftPage(t, b, oncall, id), nil, nil).Doc(t)
	require.Equal(t, 1, group(confirm, "revalidate").Length(), "the rules class it revalidate (error class policy)")

	resp := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, "revalidate", byID(d, "dl-policy-class").Text(),
		"the policy card names the class the replay needs, its error class's floor included")
}

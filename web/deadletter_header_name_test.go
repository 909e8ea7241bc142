package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDeadLetterPageRefusesUnsendableHeaderNames: a dead letter holding a
// header NATS cannot send, one of an empty name or one whose name holds a
// byte the NATS client refuses (here markup), is shown as not replayable
// as it is, with the reason as text (the name in it is the producer's,
// rendered escaped), and offers no replay button; a dead letter without
// one is offered the replay.
func TestDeadLetterPageRefusesUnsendableHeaderNames(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const markup = `<img src=x onerror=alert(1)>`
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "page-empty-name", Headers: map[string][]string{"": {"v"}}},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "page-markup-name", Headers: map[string][]string{markup: {"v"}}},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "page-fine", Headers: map[string][]string{"X-A": {"v"}}},
	)
	oncall, _ := b.SignIn(t, "acme:oncall")
	for i, want := range []string{
		"a header with an empty name cannot be sent over NATS",
		fmt.Sprintf("header %q cannot be sent over NATS", markup),
		"",
	} {
		resp := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", ids[i]), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		d := resp.Doc(t)
		assertNothingExecutable(t, d, resp.Body)
		refused := byID(d, "replay-refused")
		if want == "" {
			assert.Zero(t, refused.Length(), "dead letter %d: nothing refuses its replay", ids[i])
			assert.Equal(t, 1, byID(d, "replay").Length(), "dead letter %d: the replay is offered", ids[i])
			continue
		}
		assert.Contains(t, text(refused), want, "dead letter %d: the reason, as text", ids[i])
		assert.Equal(t, "unsendable", text(refused.Find("code")), "dead letter %d: the rule that decided", ids[i])
		assert.Zero(t, refused.Find("img").Length(), "dead letter %d: the name is text, not markup", ids[i])
		assert.Zero(t, byID(d, "replay").Length(), "dead letter %d: no replay is offered", ids[i])
	}
}

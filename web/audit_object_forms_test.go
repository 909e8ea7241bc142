package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAuditObjectFilterReadsTheConsolesIds: the Object filter finds an
// object written as the console's pages name it ("Replay request #4",
// "#4"), and says so, with the text kept in the field, when it cannot
// read what was typed.
func TestAuditObjectFilterReadsTheConsolesIds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "relay back"})
	n := strconv.FormatInt(req.ID, 10)

	rows := func(object string) int {
		t.Helper()
		resp := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(object), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, "%s: %s", object, resp.Body)
		return resp.Doc(t).Find(`[data-testid="audit-row"]`).Length()
	}
	want := rows("replay_request " + n)
	require.Positive(t, want)
	for _, o := range []string{"replay_request #" + n, "Replay request #" + n, "replay_request: #" + n, "replay_request:" + n} {
		assert.Equal(t, want, rows(o), o)
	}
	assert.GreaterOrEqual(t, rows("#"+n), want, "an id alone: every type")

	for _, bad := range []string{"replay_request #", "#", "(request) #" + n} {
		resp := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(bad), nil, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, bad)
		d := resp.Doc(t)
		_, hidden := d.Find(`#f-object-error`).Attr("hidden")
		assert.False(t, hidden, "%q: the field says it cannot read it", bad)
		assert.Contains(t, textOf(d, `#f-object-error`), "replay_request #4", bad)
		assert.Equal(t, bad, d.Find(`input[name="object"]`).AttrOr("value", ""), "%q is kept in the field", bad)
		assert.Zero(t, d.Find(`[data-testid="audit-row"]`).Length(), bad)
	}
}

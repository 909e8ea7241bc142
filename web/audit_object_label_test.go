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

// TestAuditObjectFilterReadsALabelWithoutHash: an auditor types a replay
// request as a page heads it but without the "#" ("Replay request 4",
// "replay request 4"): it was looked up as one id, "Replay request 4",
// and the log said no events match; "replay request #4" was looked up as
// object "request #4" of type "replay". Each reads as "Replay request #4".
func TestAuditObjectFilterReadsALabelWithoutHash(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "relay back"})
	n := strconv.FormatInt(req.ID, 10)

	for _, typed := range []string{"Replay request " + n, "replay request  " + n, "replay request #" + n, "replay_request " + n} {
		resp := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(typed), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Positive(t, d.Find(`[data-testid="audit-row"]`).Length(), "%q finds the request's entries (%s)", typed, textOf(d, `[data-testid="audit-count"]`))
		assert.Equal(t, typed, d.Find(`input[name="object"]`).AttrOr("value", ""), "the field keeps what was typed")
	}
}

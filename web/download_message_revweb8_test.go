package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb8ItemPayloadDownloadNamesItsMessage: since rev-web7 the audit
// log's Message ID filter (and the exports filtered by it) read the
// message_id column only, on the promise that "every entry about a message
// (a dead letter) names it there" (audit/query.go, condMessage). A
// dead letter's payload downloaded from its page is audited with its
// message id; the same payload — or the edited bytes a replay will send —
// downloaded from a replay request's page (replayItemPayload) is audited
// as deadletter.download of the dead letter with no message id. An
// auditor asking "who took the payload of message M" finds the first and
// never the second.
//
// Severity: low. Expected: the item payload download's row carries the
// dead letter's message id (and operation id), as deadLetterPayload's does.
func TestRevWeb8ItemPayloadDownloadNamesItsMessage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	auditor, _ := b.SignIn(t, "acme:auditor")
	const msg = "rw8-download-msg"
	id := seed(t, b, "acme", "email.send", msg, opHeader("op-rw8-download"))
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{})

	page := b.Do(t, approver, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	item := b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d/items/%d/payload", req.ID, id), nil, nil)
	require.Equal(t, http.StatusOK, item.Status)
	require.Equal(t, 2, b.AuditCount(t, "action = 'deadletter.download' AND object_type = 'dead_letter' AND object_id = $1", fmt.Sprint(id)),
		"both downloads are audited")

	q := url.Values{"message_id": {msg}, "action": {"deadletter.download"}}
	list := b.Do(t, auditor, "GET", "/audit?"+q.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, list.Status)
	assert.Equal(t, 2, list.Doc(t).Find(`[data-testid="audit-row"]`).Length(),
		"the audit log's Message ID filter finds the download from the dead letter's page only")
}

// TestRevWeb8CancelledItemNamesItsMessage: cancelling (or stopping) a
// request that holds jobs writes one row per item
// (replay.item.cancelled, object dead_letter), through haltJobs in
// dlq/replay/cancel.go, without the item's message id, where every other
// item row (replay.item.requested, the worker's, a reconcile's) names it.
// Searched by Message ID — the only way the log's filter reads a message
// since rev-web7 — a message's history says it was requested for replay
// (replay.item.requested names it) and then nothing: that it was cancelled, by whom and why, is missing.
//
// Severity: low. Expected: the halted items' rows carry the message id
// and operation id of their dead letters.
func TestRevWeb8CancelledItemNamesItsMessage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	requesterClient, requester := b.SignIn(t, "acme:oncall")
	const msg = "rw8-cancel-msg"
	id := seed(t, b, "acme", "search.index_update", msg, nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable: approved at once, its job waiting (no worker runs here)")
	require.Equal(t, 1, b.AuditCount(t, "action = 'replay.item.requested' AND message_id = $1", msg), "the item's request names its message")

	resp := b.Do(t, requesterClient, "POST", fmt.Sprintf("/replay/requests/%d/cancel", req.ID), url.Values{"confirmed": {"1"}, "reason": {"wrong release"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, 1, b.AuditCount(t, "action = 'replay.item.cancelled' AND object_id = $1", fmt.Sprint(id)), "the item's cancel is audited")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.item.cancelled' AND message_id = $1", msg),
		"the item's cancel row does not name its message: the Message ID filter never shows it")
}

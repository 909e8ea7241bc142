package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPayloadOverTheEditBoundIsNotEdited: a payload over
// replay.MaxEditablePayload is not put into the confirm page's edit form:
// the page says so, how to go on, and links its download; a smaller one
// beside it keeps its form, whole. An edit POSTed past the form is held
// to the same bound.
func TestPayloadOverTheEditBoundIsNotEdited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	big := bigJSON(replay.MaxEditablePayload + 1)
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "idx-bound-big", Payload: big},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "idx-bound-small", Payload: []byte(`{"doc":"small"}`)})
	page := b.Do(t, c, "GET", draftPage(t, b, c, ids...), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Less(t, len(page.Body), 128<<10, "the page holds the %d-byte payload", len(big))
	d := page.Doc(t)

	notice := d.Find(`[data-testid="payload-edit-too-large"]`)
	require.Equal(t, 1, notice.Length())
	assert.Equal(t, fmt.Sprint(ids[0]), notice.AttrOr("data-dead-letter", ""))
	assert.Contains(t, notice.Text(), "not edited in the browser")
	assert.Contains(t, notice.Text(), "Fix it at its producer and publish it again")
	download := notice.Find(`[data-testid="payload-edit-download"]`).AttrOr("href", "")
	assert.True(t, strings.HasSuffix(download, fmt.Sprintf("/items/%d/payload", ids[0])), download)

	forms := d.Find(`[data-testid="payload-edit-form"]`)
	require.Equal(t, 1, forms.Length(), "the small payload keeps its form")
	assert.Equal(t, `{"doc":"small"}`, forms.Find(`[data-testid="payload-edit"]`).Text())

	action := forms.AttrOr("action", "")
	resp := b.Do(t, c, "POST", action, url.Values{"payload": {string(big)}, "reason": {"bigger"}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	assert.Contains(t, resp.Body, "at most 256 KiB")
}

// TestRequestPageMarksCutValues: a message id and an operation id longer
// than the list shows are cut on the request page as on the list, end
// with a mark that says where the rest is, keep their hidden-character
// flag, and the message id links to the dead letter's page.
func TestRequestPageMarksCutValues(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	msgID := "mail-\u202e" + strings.Repeat("m", 4000)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: msgID,
		OperationID: "op-" + strings.Repeat("o", 4000)})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})
	page := b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	item := page.Doc(t).Find(`[data-testid="replay-items"] [data-testid="replay-item"]`)
	require.Equal(t, 1, item.Length())

	cell := item.Find(`[data-testid="replay-item-msgid"]`)
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), cell.Find("a").AttrOr("href", ""))
	assert.Equal(t, 1, cell.Find(`[data-testid="replay-item-cut"]`).Length(), "the message id is cut")
	assert.Equal(t, 1, cell.Find(`[data-testid="hidden-chars"]`).Length(), "and flagged")
	assert.Less(t, len(cell.Text()), 1000)
	op := item.Find(`[data-testid="replay-item-operation"]`)
	assert.Equal(t, 1, op.Find(`[data-testid="replay-item-cut"]`).Length(), "the operation id is cut")
	assert.Zero(t, item.Find(`[data-testid="replay-item-subject"] [data-testid="replay-item-cut"]`).Length(), "a short subject is whole")
}

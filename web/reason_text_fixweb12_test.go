package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// consoleLog is a console's log, written by its goroutines and read by the
// test.
type consoleLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *consoleLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *consoleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestFixWeb12StateChangingFormsRefuseUnstorableText: the forms that
// store what a person writes (a replay's reason and note, a rejection's,
// a cancel's, an emergency stop's reason, a reconciliation note, a payload
// edit's reason), sent with everything else right and text PostgreSQL
// cannot store in one field, are refused with UnstorableTextMessage (422)
// by the form itself: nothing reaches PostgreSQL (errorStatus's backstop
// warns when it does), and nothing changes.
func TestFixWeb12StateChangingFormsRefuseUnstorableText(t *testing.T) {
	t.Parallel()
	var log consoleLog
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Log: &log})
	ctx := context.Background()
	all, u := b.SignIn(t, "*:admin", "*:oncall", "*:approver")
	other, _ := b.SignIn(t, "*:approver")
	ids := testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme"}, testfactory.Letter{Tenant: "acme"},
		testfactory.Letter{Tenant: "acme"}, testfactory.Letter{Tenant: "acme"})
	page := map[string]string{"Accept": "text/html"}
	refused := func(t *testing.T, r testfactory.Response, what string) {
		t.Helper()
		assert.Equal(t, http.StatusUnprocessableEntity, r.Status, what)
		assert.Contains(t, r.Body, dlq.UnstorableTextMessage, what)
	}

	batch, drafts := testfactory.Draft(t, b.Replays, u.Actor, ids[0])
	for _, field := range []string{"reason", "reconciliation_note", "confirm", "rate"} {
		form := url.Values{"reason": {"consumer fixed"}}
		for _, d := range drafts {
			phrase, err := b.Replays.ConfirmationFor(ctx, d.ID)
			require.NoError(t, err)
			key := strconv.FormatInt(d.ID, 10)
			form.Set("confirm-"+key, phrase)
			switch field {
			case "confirm":
				form.Set("confirm-"+key, phrase+"\x00")
			case "rate":
				form.Set("rate-"+key, "5\xff")
			}
		}
		if field == "reason" || field == "reconciliation_note" {
			form.Set(field, "fixed \xff\x00")
		}
		refused(t, b.Do(t, all, http.MethodPost, "/replay/batches/"+batch, form, page), "submit with "+field)
	}
	var drafted int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_requests WHERE batch = $1 AND status = 'draft'`, batch).Scan(&drafted))
	assert.Equal(t, len(drafts), drafted, "nothing was submitted")

	req := testfactory.Request(t, b.Replays, u.Actor, []int64{ids[1]}, replay.SubmitInput{})
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	refused(t, b.Do(t, other, http.MethodPost, path+"/reject", url.Values{"reason": {"no\x00"}, "confirmed": {"1"}}, page), "reject")
	refused(t, b.Do(t, all, http.MethodPost, path+"/cancel", url.Values{"reason": {"no\xff"}, "confirmed": {"1"}}, page), "cancel")
	refused(t, b.Do(t, all, http.MethodPost, path+"/stop", url.Values{"reason": {"stop\x00"}, "confirm": {"STOP"}}, page), "stop")
	refused(t, b.Do(t, all, http.MethodPost, fmt.Sprintf("%s/items/%d/payload", path, ids[1]),
		url.Values{"payload": {`{"a":1}`}, "reason": {"typo\xff"}}, page), "payload edit")
	got, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request is as it was")

	refused(t, b.Do(t, all, http.MethodPost, "/replay/stop", url.Values{"tenant": {"acme"}, "reason": {"stop\x00"}, "confirm": {"STOP"}}, page), "stop all")
	refused(t, b.Do(t, all, http.MethodPost, "/replay/stop", url.Values{"tenant": {"ac\xffme"}, "reason": {"stop"}, "confirm": {"STOP"}}, page), "stop all, tenant")

	needs := testfactory.Request(t, b.Replays, u.Actor, []int64{ids[2]}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, needs.ID)
	refused(t, b.Do(t, other, http.MethodPost, fmt.Sprintf("/replay/requests/%d/items/%d/reconcile", needs.ID, ids[2]),
		url.Values{"choice": {"applied"}, "note": {"checked \x00"}}, page), "reconcile")

	assert.NotContains(t, log.String(), "PostgreSQL refused", "every form refused the text itself")
	assert.False(t, strings.Contains(log.String(), "level=ERROR msg=\"request failed\""), "no 500")
}

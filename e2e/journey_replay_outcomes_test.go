package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestReplayOutcomesJourney is issue 12's journey, in Chromium against
// Dex, nats-server and PostgreSQL. A search-index update fails at once and
// is dead-lettered while its original is still in the target stream's
// duplicate window (a minute here); another, of error class
// stale_version, beside it. The on-call selects both: the confirm page
// says that one item waits for the window of stream APP and until when,
// and names the rule that leaves the stale one out. On the request page
// the item shows deferred with its time, then replayed; the stale item
// shows amber with its reason, and the request is done with problems,
// amber, with its counts, never a green "done". The target stream holds
// the original and exactly one replay.
func TestReplayOutcomesJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	// Long enough to see the item wait, on a busy machine too (the confirm
	// page and the request page must come inside it), short enough to see
	// it go.
	const window = time.Minute
	_, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: targetStream, Subjects: []string{"app.>"}, Storage: jetstream.FileStorage, Duplicates: window})
	require.NoError(t, err)
	run := randomHex(4)
	const subject = "app.acme.search.index_update"
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall) // before the original is stored: the window runs from then
	oncall.Open("/")

	// The original is stored, its consumer fails on it at once.
	fresh := deadLetterSpec{
		Tenant: "acme", ItemType: "search.index_update", OriginalSubject: subject,
		MsgID: "fresh-" + run, Payload: fmt.Appendf(nil, `{"doc":"sku-%s"}`, run), Err: "index products: timeout", Class: dlq.ClassTransient,
	}
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: fresh.Payload}, jetstream.WithMsgID(fresh.MsgID))
	require.NoError(t, err)
	target, err := js.Stream(ctx, targetStream)
	require.NoError(t, err)
	original, err := target.GetMsg(ctx, ack.Sequence)
	require.NoError(t, err)
	fresh.FirstFailedAt = original.Time
	stale := deadLetterSpec{
		Tenant: "acme", ItemType: "search.index_update", OriginalSubject: subject,
		MsgID: "stale-" + run, Payload: []byte(`{"doc":"sku-old","version":3}`), Err: "index products: version 3 is older than 5", Class: dlq.ClassStaleVersion,
	}
	publishDeadLetter(t, ctx, js, fresh)
	publishDeadLetter(t, ctx, js, stale)
	freshID := waitDeadLetterID(t, s.DB, fresh.MsgID, s.Console.proc)
	staleID := waitDeadLetterID(t, s.DB, stale.MsgID, s.Console.proc)

	res := oncall.Fetch(http.MethodPost, "/replay", url.Values{"id": {strconv.FormatInt(freshID, 10), strconv.FormatInt(staleID, 10)}})
	require.Equal(t, http.StatusOK, res.Status, "%.300s", res.Body)
	confirm, err := url.Parse(res.URL)
	require.NoError(t, err)
	oncall.Open(confirm.Path)
	oncall.WaitUntil("the confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	waits := oncall.Text(testID("replay-waits"))
	assert.Contains(t, waits, "1 item waits for the duplicate window of APP: replayed no earlier than")
	assert.Regexp(t, `no earlier than\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\. A replay keeps`, waits, "the sentence ends at its time, with no space before its period")
	assert.Equal(t, "error-class-never", oncall.Text(testID("replay-skipped")+" "+testID("replay-item-rule")), "the rule that leaves it out")
	assert.Contains(t, oncall.Text(testID("replay-skipped")+" "+testID("replay-skip-reason")), `error class "stale_version" is never replayed`)
	oncall.Screenshot("confirm")
	oncall.Fill(testID("replay-reason"), "reindex after the timeout fix (e2e "+run+")")
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(oncall.Location())
	require.NotNil(t, m, oncall.Location())
	reqID, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)

	// Deferred, with its time, while the original is in the window.
	item := func(id int64) string {
		return fmt.Sprintf(`[data-testid="replay-item"]:has(a[href="/deadletters/%d"])`, id)
	}
	outcome := func() string { return oncall.Attr(item(freshID)+" "+testID("replay-item-outcome"), "data-outcome") }
	err = wait.Poll(time.Minute, 300*time.Millisecond, whileRunning(func() error {
		oncall.Open(requestPath(reqID))
		if o := outcome(); o != "deferred" {
			return fmt.Errorf("outcome %q: %w", o, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))
	require.NoError(t, err, "the on-call sees the item deferred")
	assert.Contains(t, oncall.Text(item(freshID)), "deferred until")
	assert.Contains(t, oncall.Text(item(freshID)+" "+testID("replay-item-why")), "stream APP drops message id")
	assert.Equal(t, 1, len(streamMessages(t, ctx, js, targetStream)), "nothing published inside the window")
	oncall.Screenshot("deferred")

	// Then replayed, once, after the window; the request is done with
	// problems (the stale item), amber with its counts.
	oncall.waitReplayStatus(reqID, "done_with_problems")
	assert.Equal(t, "replayed", outcome())
	assert.Contains(t, oncall.Attr(testID("replay-status")+" "+testID("badge"), "class"), "badge--warn", "done with problems is amber, not green")
	assert.Contains(t, oncall.Text(testID("progress-summary")), "done with problems 1 replayed · 1 blocked")
	assert.Equal(t, "done with problems: 1 replayed, 1 blocked", oncall.Text(testID("replay-status-reason")))
	staleRow := item(staleID)
	assert.Equal(t, "block", oncall.Attr(staleRow+" "+testID("replay-item-verdict"), "data-verdict"))
	assert.Contains(t, oncall.Attr(staleRow+" "+testID("badge"), "class"), "badge--warn", "a blocked item shows amber")
	assert.Contains(t, oncall.Text(staleRow), "resolve it by hand", "with its reason")
	oncall.Screenshot("")

	msgs := streamMessages(t, ctx, js, targetStream)
	require.Len(t, msgs, 2, "the original and exactly one replay")
	assert.Equal(t, fresh.MsgID, msgs[1].Header.Get(dlq.HeaderNatsMsgID))
	assert.Equal(t, strconv.FormatInt(freshID, 10), msgs[1].Header.Get(dlq.HeaderReplayOf))
	replayed, err := target.GetMsg(ctx, msgs[1].Seq)
	require.NoError(t, err)
	assert.False(t, replayed.Time.Before(original.Time.Add(window)), "stored after the window: %s, original %s", replayed.Time, original.Time)

	// The dead letters say the same: replayed, and not replayed (amber);
	// the stale one's page offers to record a fix of its item type.
	oncall.openDeadLetter(freshID)
	assert.Equal(t, "replayed", oncall.Attr(testID("deadletter-replay")+" "+testID("replay-item-outcome"), "data-outcome"))
	oncall.openDeadLetter(staleID)
	assert.Contains(t, oncall.Attr(testID(triageIDs.DetailStatus)+" "+testID("badge"), "class"), "badge--warn")
	assert.True(t, oncall.Exists(testID("fix-form")), "an on-call records fixes from here")
	oncall.Screenshot("deadletter")
	oncall.Open("/groups?state=all")
	oncall.WaitUntil("the groups page", `document.querySelector('[data-testid="group-row"]')`)
	oncall.Screenshot("groups")
}

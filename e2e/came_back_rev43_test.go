package e2e

import (
	"context"
	"errors"
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

// TestRev43CameBackJourney, in Chromium against Dex, nats-server and
// PostgreSQL: three search-index updates are replayed; the broker stores
// two at once, and the third waits for its target stream's duplicate
// window (a minute here), so the request runs meanwhile. The consumer
// fails on the first of them again and dead-letters it (it keeps
// Dlq-Replay-Of, which ingest links). The request page, open while it
// runs, says so by its own poll, not reloaded: amber, that 1 of 2
// replayed items came back, and the dead letter beside the item, its
// rows agreeing with its progress. Once the third went, the request is
// done, "3 replayed", and its page says 1 of 3 came back; the replays
// list says "1 came back" on its row. Screenshots at 1440, 1280 and 390
// px (.data/e2e-artifacts/TestRev43CameBackJourney*.png), and of the
// page while it ran (…running.png).
func TestRev43CameBackJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	// Long enough to see the request run, on a busy machine too (the
	// confirm page and the request page must come inside it), short enough
	// to see the waiting item go.
	const window = time.Minute
	_, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: targetStream, Subjects: []string{"app.>"}, Storage: jetstream.FileStorage, Duplicates: window})
	require.NoError(t, err)
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	run := randomHex(4)
	const subject = "app.acme.search.index_update"
	specs := []deadLetterSpec{}
	var ids []int64
	for i := range 3 {
		d := deadLetterSpec{
			Tenant: "acme", ItemType: "search.index_update", OriginalSubject: subject,
			MsgID: fmt.Sprintf("back-%s-%d", run, i), Payload: fmt.Appendf(nil, `{"doc":"sku-%d"}`, i),
			Err: "index products: timeout", Class: dlq.ClassTransient,
		}
		if i == 2 {
			d.FirstFailedAt = time.Now() // its original is inside the window: it waits
		}
		publishDeadLetter(t, ctx, js, d)
		specs = append(specs, d)
	}
	for _, d := range specs {
		ids = append(ids, waitDeadLetterID(t, s.DB, d.MsgID, s.Console.proc))
	}

	res := oncall.Fetch(http.MethodPost, "/replay", url.Values{"id": {strconv.FormatInt(ids[0], 10), strconv.FormatInt(ids[1], 10), strconv.FormatInt(ids[2], 10)}})
	require.Equal(t, http.StatusOK, res.Status, "%.300s", res.Body)
	confirm, err := url.Parse(res.URL)
	require.NoError(t, err)
	oncall.Open(confirm.Path)
	oncall.WaitUntil("the confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	oncall.Fill(testID("replay-reason"), "reindex after the timeout fix (e2e "+run+")")
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(oncall.Location())
	require.NotNil(t, m, oncall.Location())
	reqID, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	item := func(id int64) string {
		return fmt.Sprintf(`[data-testid="replay-item"]:has(a[href="/deadletters/%d"])`, id)
	}
	outcome := func(id int64) string { return oncall.Attr(item(id)+" "+testID("replay-item-outcome"), "data-outcome") }
	err = wait.Poll(time.Minute, 300*time.Millisecond, whileRunning(func() error {
		oncall.Open(requestPath(reqID))
		status := oncall.Attr(testID("replay-status"), "data-status")
		if status != "running" || outcome(ids[0]) != "replayed" || outcome(ids[1]) != "replayed" || outcome(ids[2]) != "deferred" {
			return fmt.Errorf("%s, items %s %s %s: %w", status, outcome(ids[0]), outcome(ids[1]), outcome(ids[2]), wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))
	require.NoError(t, err, "the request runs: two replayed, one waits for the window")
	oncall.MarkPage() // from here the page is not reloaded: its poll brings what changes

	// The consumer fails on the first replayed message again: it
	// dead-letters it as it got it, Dlq-Replay-Of and all.
	replayed := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: specs[0].Payload}
	replayed.Header.Set(dlq.HeaderNatsMsgID, specs[0].MsgID)
	replayed.Header.Set(dlq.HeaderReplayOf, strconv.FormatInt(ids[0], 10))
	back, err := dlq.NewMessage(dlq.DefaultSubjectPrefix, "acme", "search.index_update", replayed, dlq.Origin{}, dlq.Failure{
		Err: errors.New("index products: mapping rejects field sku"), Class: dlq.ClassPermanent, Consumer: "e2e-consumer", Attempts: 5,
		FirstFailedAt: time.Now(),
	})
	require.NoError(t, err)
	back.Header.Set(dlq.HeaderReplayOf, strconv.FormatInt(ids[0], 10))
	_, err = js.PublishMsg(ctx, back)
	require.NoError(t, err)
	var backID int64
	wait.For(t, "the returning dead letter, linked", 2*time.Minute, whileRunning(func() error {
		err := s.DB.QueryRow(ctx, `SELECT id FROM dead_letters WHERE replay_of = $1`, ids[0]).Scan(&backID)
		if err != nil {
			return fmt.Errorf("%v: %w", err, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))

	// The page open while it runs says so by its poll, not reloaded.
	oncall.WaitUntil("the return, on the running request's page by its poll", `window.__e2eLeft === true &&
		document.querySelector('[data-testid="replay-came-back-count"]') &&
		document.querySelector(`+jsString(item(ids[0])+" "+testID("replay-item-came-back"))+`)`)
	assert.Equal(t, "running", oncall.Attr(testID("replay-status"), "data-status"), "it still runs")
	assert.Equal(t, "1 of 2 replayed items came back as a new dead letter.", oncall.Text(testID("replay-came-back-count")))
	assert.Contains(t, oncall.Text(item(ids[0])+" "+testID("replay-item-came-back")), fmt.Sprintf("came back as #%d", backID))
	assert.Equal(t, "2", oncall.Text(testID("progress-replayed")))
	assert.Equal(t, 2, eval[int](oncall, "count the rows replayed", `document.querySelectorAll('[data-testid="replay-items"] [data-outcome="replayed"]').length`),
		"the rows agree with the progress above them")
	assert.Equal(t, "deferred", outcome(ids[2]))
	oncall.Screenshot("running")

	oncall.waitReplayStatus(reqID, "done")
	oncall.WaitUntil("the request page", `document.querySelector('[data-testid="replay-came-back"]')`)
	assert.Equal(t, "done", oncall.Attr(testID("replay-status"), "data-status"))
	assert.Equal(t, "1 of 3 replayed items came back as a new dead letter.", oncall.Text(testID("replay-came-back-count")))
	assert.Contains(t, oncall.Text(item(ids[0])+" "+testID("replay-item-came-back")), fmt.Sprintf("came back as #%d", backID))
	for _, other := range ids[1:] {
		assert.False(t, oncall.Exists(item(other)+" "+testID("replay-item-came-back")), "the others did not come back")
	}
	oncall.Screenshot("")
	oncall.shotAt(1280, "1280.png")
	oncall.shotAt(390, "phone.png")

	oncall.Open("/replay/requests")
	oncall.WaitUntil("the replays list", `document.querySelector('[data-testid="replay-row"]')`)
	assert.Equal(t, "1 came back", oncall.Text(fmt.Sprintf(`[data-testid="replay-row"][data-id="%d"] [data-testid="replay-row-came-back"]`, reqID)))
	oncall.shotAt(1280, "list.png")
}

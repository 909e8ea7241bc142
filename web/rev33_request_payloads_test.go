package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUX33RequestPageSaysRetentionRemovedThePayload: once retention
// removed a closed request's dead letter, the request page said of its
// payload "0 B · The payload is empty" beside the SHA-256 of a payload
// that was not, and its download answered an empty file, audited as a
// download. The page says retention removed it; the download answers 410
// Gone with why, and audits no download.
func TestRevUX33RequestPageSaysRetentionRemovedThePayload(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	// The console's own keeper, which runs a pass at start, must not
	// remove the 200-day-old dead letter before the request holds it.
	release := b.HoldKeepers(t)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rr33-gone",
		Payload: []byte(`{"doc":"sku-1"}`), At: time.Now().AddDate(0, 0, -200)})
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{id}, replay.SubmitInput{})
	release()
	require.NoError(t, b.Replays.Cancel(context.Background(), req.ID, me.Actor, "not needed", quarantine.RequestMeta{}))
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	before := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	require.Contains(t, textOf(before, `[data-testid="replay-payload-body"]`), "sku-1", "the payload, while its dead letter is there")
	require.Equal(t, 1, before.Find(`[data-testid="replay-item-sha"] a`).Length(), "and its download")

	keeper := b.Keeper()
	_, err := keeper.Pass(context.Background())
	require.NoError(t, err)
	var left int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE id = $1`, id).Scan(&left))
	require.Zero(t, left, "retention removed the dead letter")

	page := b.Do(t, oncall, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	payloads := textOf(d, `[data-testid="replay-payloads"]`)
	assert.NotContains(t, payloads, "The payload is empty")
	assert.NotContains(t, payloads, "0 B")
	assert.Contains(t, textOf(d, `[data-testid="replay-payload-removed"]`), "Retention removed this dead letter")

	assert.Equal(t, "removed by retention", textOf(d, `[data-testid="replay-item-removed"]`), "the items table says so too")
	assert.Zero(t, d.Find(`[data-testid="replay-item-sha"] a`).Length(), "and links no download that would answer 410")
	downloads := b.AuditCount(t, `action = 'deadletter.download' AND outcome = 'ok'`)
	got := b.Do(t, oncall, "GET", fmt.Sprintf("%s/items/%d/payload", path, id), nil, nil)
	assert.Equal(t, http.StatusGone, got.Status)
	assert.Contains(t, got.Body, "Retention removed this dead letter")
	assert.Equal(t, downloads, b.AuditCount(t, `action = 'deadletter.download' AND outcome = 'ok'`), "nothing downloaded, nothing audited as downloaded")
}

// TestRevUX33RequestPageOffersNoDownloadItsReaderMayNotTake: the request
// page linked "Download all of it" under a payload cut short for every
// reader, though an auditor (read, no download) is always refused it, and
// the refusal is audited under their name. Only a reader who may download
// gets the link; the others read that their role does not allow it, as
// on the dead letter's page.
func TestRevUX33RequestPageOffersNoDownloadItsReaderMayNotTake(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "acme:auditor")
	big := `{"doc":"` + strings.Repeat("x", 40<<10) + `"}`
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rr33-big", Payload: []byte(big)})
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{id}, replay.SubmitInput{})
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	link := `[data-testid="replay-payloads"] a[href$="/payload"]`

	mine := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, 1, mine.Find(link).Length(), "the requester may download: the link")

	page := b.Do(t, auditor, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	require.True(t, strings.Contains(textOf(d, `[data-testid="replay-payloads"]`), "Showing the first"), "the payload is cut short on the page")
	assert.Zero(t, d.Find(link).Length(), "no link the auditor is always refused")
	assert.True(t, strings.Contains(textOf(d, `[data-testid="replay-payloads"]`), "Your role does not allow downloading payloads"), "the page says why there is no link")
}

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

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall20RetentionNoticeLinksAnothersDraft: this round's retention
// notice on a dead letter's page ("Retention keeps it while replay request
// #N (draft) names it", linked) names a draft whoever opens the page, but a
// draft exists only for the person who drafted it (inTenant: someone
// else's draft is not found, and the attempt is audited as denied). A
// colleague on call in the same tenant opens the dead letter, reads that
// request #N keeps it, follows the console's own link and gets "not
// found", with a denied row written under their name in the audit log.
//
// Expected: the page names only what the viewer can open (the draft to
// its author; to others, that "a replay draft names it" without a link,
// or nothing that leads to a refusal), so following a link the console
// offers never answers not found nor audits a denial.
func TestRevOncall20RetentionNoticeLinksAnothersDraft(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, author := b.SignIn(t, "acme:oncall")
	colleague, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rev20h-draft-link",
		Error: "index shard 20h-draft unavailable", At: time.Now().Add(-2 * time.Hour)})
	_, drafts := testfactory.Draft(t, b.Replays, author.Actor, id)
	require.Len(t, drafts, 1)
	require.Equal(t, "draft", string(drafts[0].Status))

	// The active retention terms, as the console's keeper records them.
	keeper := b.Keeper()
	_, err := keeper.Pass(context.Background())
	require.NoError(t, err)

	page := b.Do(t, colleague, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	notice := page.Doc(t).Find(`[data-testid="dl-retention"]`)
	require.Equal(t, 1, notice.Length(), "the page says what retention does with it")
	t.Logf("notice: %q", strings.Join(strings.Fields(notice.Text()), " "))
	href, linked := notice.Find("a").Attr("href")
	if !linked {
		return
	}
	denied := b.AuditCount(t, `outcome = 'denied'`)
	followed := b.Do(t, colleague, "GET", href, nil, nil)
	assert.Equal(t, http.StatusOK, followed.Status,
		"the dead letter page links %s (another person's draft) as the request that keeps it; following it answers %d", href, followed.Status)
	assert.Equal(t, denied, b.AuditCount(t, `outcome = 'denied'`), "following the console's own link audits a denied attempt")
}

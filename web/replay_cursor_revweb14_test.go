package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb14ReplaysPageCursorPastInt32IsNoServerError: the replays
// page's "before" cursor is a request id (replay_requests.id is bigint; the
// page's pattern takes up to 18 digits), yet any cursor above 2^31-1 answers
// 500 "Something went wrong": listWhere's pager reads "$16 = 0 OR ... id <
// $16", and PostgreSQL types $16 from the literal 0 as an integer, so pgx
// cannot send the id. A link to a later page, edited or once ids pass 2^31,
// is a server error rather than the page (every request below it) or the
// page's 422 "The page link is broken".
func TestRevWeb14ReplaysPageCursorPastInt32IsNoServerError(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-1", nil)}, replay.SubmitInput{})

	for _, q := range []string{"before=m2147483648", "order=newest&before=2147483648", "before=m999999999999999999"} {
		resp := b.Do(t, oncall, "GET", "/replay/requests?"+q, nil, nil)
		require.NotEqual(t, http.StatusInternalServerError, resp.Status, "%s: a cursor past 2^31-1 is a server error", q)
		require.Contains(t, []int{http.StatusOK, http.StatusUnprocessableEntity}, resp.Status, q)
		if resp.Status == http.StatusOK {
			assert.Equal(t, 1, row(resp.Doc(t), req.ID).Length(), "%s: request %d is before the cursor", q, req.ID)
		}
	}
	// Below 2^31 the same page answers.
	resp := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests?before=m%d", 2147483647), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
}

package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDeadLetterShowBoundsHeaderRows: a producer may send hundreds of
// thousands of tiny headers in one dead letter (a NATS message of a few
// megabytes). Its page shows the first few hundred, says how many more
// the dead letter holds, and stays small: the page is rendered into a
// buffer first, and a page of 200,000 table rows costs the server about
// 60 MB and the browser far more.
func TestDeadLetterShowBoundsHeaderRows(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	hs := map[string][]string{}
	for i := range 200_000 {
		hs[fmt.Sprintf("H%06d", i)] = []string{"v"}
	}
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "many-headers", Headers: hs})
	c, _ := b.SignIn(t, "acme:oncall")

	start := time.Now()
	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	t.Logf("page: %d bytes in %v", len(resp.Body), time.Since(start))
	d := resp.Doc(t)
	rows := d.Find(`[data-testid="dl-header"]`)
	assert.LessOrEqual(t, rows.Length(), 500)
	assert.Equal(t, "Dlq-Attempts", rows.First().Find(".headers__name").Text(), "the first headers, in order of their names")
	assert.Contains(t, byID(d, "dl-headers-more").Text(), fmt.Sprintf("%d more headers", 200_000+6-500))
	assert.Less(t, len(resp.Body), 1<<20, "the page stays under a megabyte")
}

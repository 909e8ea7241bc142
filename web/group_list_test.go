package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
	"github.com/quarantine-console/quarantine/testfactory"
)

// fillSmall writes n demo dead letters (acme, globex, initech).
func fillSmall(t *testing.T, b *testfactory.Console, n int) {
	t.Helper()
	_, err := dlqdemo.Fill(t.Context(), b.DB.OwnerPool, dlqdemo.FillConfig{Rows: n, ChunkRows: 2000}) // the load rebuilds indexes: the owner
	require.NoError(t, err)
	// The fill announced its new tenants; the console's listener reads
	// them again when the notification reaches it, which may be after the
	// test's next request. Read them now, as it will.
	_, err = b.Store.Counters().Refresh(t.Context())
	require.NoError(t, err)
}

func TestGroupList(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	stack := "main.refund()\n\t/app/refund.go:42\nmain.handle()\n\t/app/h.go:7\nmain.main()"
	var ls []testfactory.Letter
	for i := range 30 {
		ls = append(ls, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "unknown_effect", Error: fmt.Sprintf("refund ord-%d timed out", i), Stack: stack})
	}
	for i := range 5 {
		ls = append(ls, testfactory.Letter{Tenant: []string{"acme", "globex"}[i%2], ItemType: []string{"email.send", "email.digest"}[i%2], Class: "permanent",
			Error: fmt.Sprintf("smtp 550 <c%d@example.com>: rejected", i)})
	}
	ls = append(ls, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", Class: "stale_version", Error: "version conflict " + scriptTag})
	ids := testfactory.DeadLetters(t, b.Pool, ls...)
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, ids[:10]...)
	refund := dlq.Fingerprint(dlq.ClassUnknownEffect, "refund ord-0 timed out", stack)
	smtp := dlq.Fingerprint(dlq.ClassPermanent, "smtp 550 <c0@example.com>: rejected", "")

	c, _ := b.SignIn(t, "acme:viewer", "globex:viewer")

	t.Run("Groups", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/groups", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		d := resp.Doc(t)
		assertNothingExecutable(t, d, resp.Body)
		rows := byID(d, "group-row")
		require.Equal(t, 3, rows.Length())
		first := rows.Eq(0)
		assert.Equal(t, refund, first.AttrOr("data-fingerprint", ""))
		assert.Equal(t, "20", text(first.Find(`[data-testid="group-unresolved"]`)))
		assert.Equal(t, "30", text(first.Find(`[data-testid="group-total"]`)))
		assert.Equal(t, "acme", text(first.Find(`[data-testid="group-tenants"]`)))
		assert.Equal(t, "orders.refund", text(first.Find(`[data-testid="group-types"]`)))
		assert.Equal(t, "refund ord-29 timed out", text(first.Find(`[data-testid="group-link"]`)), "the sample is the newest stored")
		assert.Equal(t, "main.refund()\n\t/app/refund.go:42\nmain.handle()\n\t/app/h.go:7\nmain.main()", first.Find(`[data-testid="group-stack"]`).Text())
		assert.Equal(t, "/deadletters?group="+refund+"&status=unresolved&tenant=acme", first.Find(`[data-testid="group-link"]`).AttrOr("href", ""), "of the tenants the row counts")
		second := rows.Eq(1)
		assert.Equal(t, smtp, second.AttrOr("data-fingerprint", ""))
		assert.Equal(t, "acme, globex", text(second.Find(`[data-testid="group-tenants"]`)))
		assert.Equal(t, "email.digest, email.send", text(second.Find(`[data-testid="group-types"]`)))
		assert.Contains(t, text(rows.Eq(2).Find(`[data-testid="group-link"]`)), scriptTag, "as text")
		assert.Equal(t, "3 groups", text(byID(d, "group-count")))

		// Following the link lists exactly the group's unresolved dead letters.
		list := b.Do(t, c, "GET", first.Find(`[data-testid="group-link"]`).AttrOr("href", "")+"&count=1", nil, nil).Doc(t)
		assert.Equal(t, "20 dead letters", text(byID(list, "deadletter-count")))
		assert.Equal(t, idStrings(ids[10:30]), rowIDs(list))
	})

	t.Run("Filters", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"tenant=globex", []string{smtp, dlq.Fingerprint(dlq.ClassStaleVersion, "version conflict "+scriptTag, "")}},
			{"type=email.send", []string{smtp}},
			{"class=unknown_effect", []string{refund}},
			{"sort=count&tenant=acme", []string{refund, smtp}},
			{"state=all&sort=new&class=unknown_effect", []string{refund}},
		} {
			d := b.Do(t, c, "GET", "/groups?"+tc.query, nil, nil).Doc(t)
			var got []string
			byID(d, "group-row").Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("data-fingerprint", "")) })
			assert.Equal(t, tc.want, got, tc.query)
		}
		d := b.Do(t, c, "GET", "/groups?type=no.such", nil, nil).Doc(t)
		assert.Equal(t, 1, byID(d, "empty-state").Length())
	})

	t.Run("Invalid", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/groups?sort=sideways&state=some&tenant=initech&class=fatal", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		d := resp.Doc(t)
		for _, f := range []string{"sort", "state", "tenant", "class"} {
			assert.Equal(t, 1, byID(d, "field-error-"+f).Length(), f)
		}
	})

	t.Run("OnlyOwnTenants", func(t *testing.T) {
		globexOnly, _ := b.SignIn(t, "globex:viewer")
		resp := b.Do(t, globexOnly, "GET", "/groups?state=all", nil, nil)
		d := resp.Doc(t)
		assert.Equal(t, 2, byID(d, "group-row").Length())
		assert.NotContains(t, resp.Body, "refund ord-")
		assert.Equal(t, "globex", text(byID(d, "group-row").Eq(0).Find(`[data-testid="group-tenants"]`)), "acme's share of a shared group is not shown")
	})
}

// TestGroupsAfterFill checks the groups page against the table after a
// demo fill: every group, with its count.
func TestGroupsAfterFill(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	fillSmall(t, b, 6000)
	c, _ := b.SignIn(t, "*:viewer")
	d := b.Do(t, c, "GET", "/groups?state=all&sort=count", nil, nil).Doc(t)
	var groups int
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT fingerprint) FROM dead_letters`).Scan(&groups))
	assert.Equal(t, fmt.Sprintf("1–100 of %d groups", groups), text(byID(d, "group-count")))
	next := byID(d, "pager-next").AttrOr("href", "")
	require.Contains(t, next, "page=2", "the groups beyond the first 100")
	d2 := b.Do(t, c, "GET", next, nil, nil).Doc(t)
	assert.Equal(t, fmt.Sprintf("101–%d of %d groups", min(200, groups), groups), text(byID(d2, "group-count")))
	assert.NotEqual(t, byID(d, "group-row").First().AttrOr("data-fingerprint", ""), byID(d2, "group-row").First().AttrOr("data-fingerprint", ""))
	rows := byID(d, "group-row")
	require.Equal(t, 100, rows.Length())
	rows.Each(func(i int, s *goquery.Selection) {
		if i%10 != 0 {
			return
		}
		var n int
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM dead_letters WHERE fingerprint = $1`, s.AttrOr("data-fingerprint", "")).Scan(&n))
		assert.Equal(t, fmtCount(int64(n)), text(s.Find(`[data-testid="group-total"]`)))
	})
}

package web

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
)

// fillSmall writes n demo dead letters (acme, globex, initech).
func fillSmall(t *testing.T, b *bundle, n int) {
	t.Helper()
	_, err := dlqdemo.Fill(t.Context(), b.db.Pool, dlqdemo.FillConfig{Rows: n, ChunkRows: 2000})
	require.NoError(t, err)
}

func TestGroupList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stack := "main.refund()\n\t/app/refund.go:42\nmain.handle()\n\t/app/h.go:7\nmain.main()"
	var ls []letter
	for i := range 30 {
		ls = append(ls, letter{tenant: "acme", itemType: "orders.refund", class: "unknown_effect", err: fmt.Sprintf("refund ord-%d timed out", i), stack: stack})
	}
	for i := range 5 {
		ls = append(ls, letter{tenant: []string{"acme", "globex"}[i%2], itemType: []string{"email.send", "email.digest"}[i%2], class: "permanent",
			err: fmt.Sprintf("smtp 550 <c%d@example.com>: rejected", i)})
	}
	ls = append(ls, letter{tenant: "globex", itemType: "search.index_update", class: "stale_version", err: "version conflict " + scriptTag})
	ids := b.store(t, ls...)
	_, err := b.db.Pool.Exec(t.Context(), `UPDATE dead_letters SET status = 'discarded' WHERE id = ANY($1)`, ids[:10])
	require.NoError(t, err)
	refund := dlq.Fingerprint(dlq.ClassUnknownEffect, "refund ord-0 timed out", stack)
	smtp := dlq.Fingerprint(dlq.ClassPermanent, "smtp 550 <c0@example.com>: rejected", "")

	c, _ := b.signIn(t, "acme:viewer", "globex:viewer")

	t.Run("Groups", func(t *testing.T) {
		resp := b.do(t, c, "GET", "/groups", nil, nil)
		require.Equal(t, http.StatusOK, resp.status)
		d := resp.doc(t)
		assertNothingExecutable(t, d, resp.body)
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
		assert.Equal(t, "/deadletters?group="+refund+"&status=unresolved", first.Find(`[data-testid="group-link"]`).AttrOr("href", ""))
		second := rows.Eq(1)
		assert.Equal(t, smtp, second.AttrOr("data-fingerprint", ""))
		assert.Equal(t, "acme, globex", text(second.Find(`[data-testid="group-tenants"]`)))
		assert.Equal(t, "email.digest, email.send", text(second.Find(`[data-testid="group-types"]`)))
		assert.Contains(t, text(rows.Eq(2).Find(`[data-testid="group-link"]`)), scriptTag, "as text")
		assert.Equal(t, "3 groups", text(byID(d, "group-count")))

		// Following the link lists exactly the group's unresolved dead letters.
		list := b.do(t, c, "GET", first.Find(`[data-testid="group-link"]`).AttrOr("href", "")+"&count=1", nil, nil).doc(t)
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
			d := b.do(t, c, "GET", "/groups?"+tc.query, nil, nil).doc(t)
			var got []string
			byID(d, "group-row").Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("data-fingerprint", "")) })
			assert.Equal(t, tc.want, got, tc.query)
		}
		d := b.do(t, c, "GET", "/groups?type=no.such", nil, nil).doc(t)
		assert.Equal(t, 1, byID(d, "empty-state").Length())
	})

	t.Run("Invalid", func(t *testing.T) {
		resp := b.do(t, c, "GET", "/groups?sort=sideways&state=some&tenant=initech&class=fatal", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.status)
		d := resp.doc(t)
		for _, f := range []string{"sort", "state", "tenant", "class"} {
			assert.Equal(t, 1, byID(d, "field-error-"+f).Length(), f)
		}
	})

	t.Run("OnlyOwnTenants", func(t *testing.T) {
		globexOnly, _ := b.signIn(t, "globex:viewer")
		resp := b.do(t, globexOnly, "GET", "/groups?state=all", nil, nil)
		d := resp.doc(t)
		assert.Equal(t, 2, byID(d, "group-row").Length())
		assert.NotContains(t, resp.body, "refund ord-")
		assert.Equal(t, "globex", text(byID(d, "group-row").Eq(0).Find(`[data-testid="group-tenants"]`)), "acme's share of a shared group is not shown")
	})
}

// TestGroupsAfterFill checks the groups page against the table after a
// demo fill: every group, with its count.
func TestGroupsAfterFill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fillSmall(t, b, 6000)
	c, _ := b.signIn(t, "*:viewer")
	d := b.do(t, c, "GET", "/groups?state=all&sort=count", nil, nil).doc(t)
	var groups int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT fingerprint) FROM dead_letters`).Scan(&groups))
	assert.Equal(t, fmt.Sprintf("100 of %d groups", groups), text(byID(d, "group-count")))
	rows := byID(d, "group-row")
	require.Equal(t, 100, rows.Length())
	rows.Each(func(i int, s *goquery.Selection) {
		if i%10 != 0 {
			return
		}
		var n int
		require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM dead_letters WHERE fingerprint = $1`, s.AttrOr("data-fingerprint", "")).Scan(&n))
		assert.Equal(t, fmtCount(int64(n)), text(s.Find(`[data-testid="group-total"]`)))
	})
}

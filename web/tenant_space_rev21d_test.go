package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall21TenantLinkWithEdgeSpaceListsAnotherTenant: a producer
// publishes to dlq.acme<U+00A0>.orders.refund (NBSP is valid in a NATS
// subject: nats-server refuses only "\t\n\f\r " in a token). Ingest keeps
// the token as tenant "acme\u00a0" (tenantToken refuses wildcards, bad
// UTF-8, NUL and U+FFFD, not white space; the same token in an item type
// is flagged invalid:item_type but kept). The dashboard of a "*" on-call
// lists that tenant, "1 unresolved", its name written with its hidden
// character, linked to /deadletters?tenant=acme%C2%A0&status=unresolved.
// But every filter reads its values through formText.get, which trims
// surrounding Unicode white space (strings.TrimSpace): the list reads
// tenant "acme", which is one of the person's tenants, and lists acme's
// two dead letters, not the one the row counted. Its "Discard all
// matching…" (the same readDeadLetterFilter, bulkFilter) acts on acme's;
// the groups page's row actions (tenant=... for each of g.Tenants) drop
// acme<U+00A0>'s silently. The one dead letter the row counts cannot be
// reached by any filter.
//
// Expected: a link the console made from a stored tenant (or item type)
// lists that tenant's dead letters: values read back exactly (or such
// tokens refused at ingest, as wildcards are).
func TestRevOncall21TenantLinkWithEdgeSpaceListsAnotherTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "*:oncall")
	const odd = "acme\u00a0"
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: odd, ItemType: "orders.refund", MsgID: "rev21d-nbsp-odd", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rev21d-nbsp-acme-1", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rev21d-nbsp-acme-2", Error: "refund failed"})
	var stored string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT tenant FROM dead_letters WHERE id = $1`, ids[0]).Scan(&stored))
	require.Equal(t, odd, stored, "stored under its own tenant")

	dash := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
	var row *goquery.Selection
	dash.Find(`[data-testid="tenant-row"]`).Each(func(_ int, s *goquery.Selection) {
		if s.AttrOr("data-tenant", "") == odd {
			row = s
		}
	})
	require.NotNil(t, row, "the dashboard lists tenant acme<U+00A0>")
	require.Equal(t, "1", strings.TrimSpace(row.Find(`[data-testid="tenant-unresolved"]`).Text()))
	href, ok := row.Find("a.row-link").Attr("href")
	require.True(t, ok)

	resp := b.Do(t, oncall, "GET", href, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	var listed []int64
	resp.Doc(t).Find(`[data-testid="deadletter-row"]`).Each(func(_ int, s *goquery.Selection) {
		id, _ := strconv.ParseInt(s.AttrOr("data-id", ""), 10, 64)
		listed = append(listed, id)
	})
	assert.Equal(t, []int64{ids[0]}, listed,
		"the row of tenant acme<U+00A0> (1 unresolved) links %s, which lists acme's dead letters %v instead of its own", href, ids[1:])
}

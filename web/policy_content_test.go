package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// policyWithRule is the shipped policy file with a first rule for
// itemType (manual) and a retention rule keeping acme's kept.<itemType>
// dead letters a year.
func policyWithRule(t *testing.T, name, itemType string) *replaypolicy.Table {
	t.Helper()
	src := strings.Replace(string(shippedPolicyAnd(t, "")), "\n[[rule]]", fmt.Sprintf("\n[[rule]]\nitem_type = %q\nclass = \"manual\"\n\n[[rule]]", itemType), 1)
	src += fmt.Sprintf("\n[[retention.rule]]\ntenant = \"acme\"\nitem_type = \"kept.%s\"\nclosed = \"365d\"\n", itemType)
	tbl, err := replaypolicy.Parse(name, []byte(src))
	require.NoError(t, err)
	return tbl
}

// activate starts a process with tbl, as process: a deploy of its file.
func activate(t *testing.T, b *testfactory.Console, tbl *replaypolicy.Table, process string) {
	t.Helper()
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return tbl }}).ActivatePolicy(context.Background(), process))
}

// policyRules are the item types of the rules a Policy page shows.
func policyRules(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="policy-rule"]`).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.TrimSpace(s.Find("td").First().Text()))
	})
	return out
}

// TestPolicyPageShowsTheActiveVersion: the Policy page shows the rules and
// retention terms of the active version, as its activation recorded them,
// not those of the file of the console that renders it: a console whose
// file another process's deploy replaced shows the deployed rules, with
// the note that its own file differs (and what it does meanwhile).
func TestPolicyPageShowsTheActiveVersion(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	admin, _ := b.SignIn(t, "*:admin")
	mine := b.Replays.Policy()
	page := b.Do(t, admin, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	doc := page.Doc(t)
	assert.Equal(t, mine.Version(), doc.Find(`[data-testid="policy-version"]`).Text())
	assert.NotContains(t, policyRules(doc), "ledger.special")

	deployed := policyWithRule(t, "deployed.toml", "ledger.special")
	activate(t, b, deployed, "console-7f9c-42")
	page = b.Do(t, admin, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	doc = page.Doc(t)
	assert.Equal(t, deployed.Version(), doc.Find(`[data-testid="policy-version"]`).Text(), "the active version")
	assert.Equal(t, "ledger.special", policyRules(doc)[0], "the active version's rules")
	assert.Len(t, policyRules(doc), len(deployed.Rules()))
	assert.Contains(t, doc.Find(`[data-testid="retention"]`).Text(), "kept.ledger.special", "the active terms")
	assert.Contains(t, page.Body, "deployed.toml", "the file the active version came from")

	note := doc.Find(`[data-testid="policy-stale"]`)
	require.Equal(t, 1, note.Length(), page.Body)
	text := strings.Join(strings.Fields(note.Text()), " ")
	assert.Contains(t, text, "This console runs policy version "+mine.Version()[:16])
	assert.Contains(t, text, "The tables below are the active version's, as its activation recorded them, not this console's file")
	terms := strings.Join(strings.Fields(doc.Find(`[data-testid="policy-retention-stale"]`).Text()), " ")
	assert.Contains(t, terms, "The retention table below holds the active terms, as their activation recorded them, not this console's file")
}

// TestPolicyPageShowsAVersionByName: /policy?version= shows, read-only,
// what a version that was active said, by its name or the start of it,
// to those who may read the policy page: a replaced replay policy version
// (the one a request was made under, which its page links to), or
// retention terms. A version that was never active is not found.
func TestPolicyPageShowsAVersionByName(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	auditor, _ := b.SignIn(t, "*:auditor")
	viewer, _ := b.SignIn(t, "acme:viewer")
	_, requester := b.SignIn(t, "acme:oncall")
	mine := b.Replays.Policy()
	mail := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "m-1", OperationID: "op-1"})
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{mail}, replay.SubmitInput{})
	older, newer := policyWithRule(t, "older.toml", "ledger.special"), policyWithRule(t, "newer.toml", "ledger.other")
	activate(t, b, older, "host-1")
	activate(t, b, newer, "host-2")

	page := b.Do(t, auditor, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	link := page.Doc(t).Find(`[data-testid="replay-policy-rules"]`)
	require.Equal(t, 1, link.Length(), "the request page links to the rules it was made under")
	assert.Equal(t, "/policy?version="+mine.Version(), link.AttrOr("href", ""))

	for _, tc := range []struct {
		name, version string
		tbl           *replaypolicy.Table
	}{{"OfARequest", mine.Version(), mine}, {"ByItsStart", older.Version()[:12], older}} {
		t.Run(tc.name, func(t *testing.T) {
			page := b.Do(t, auditor, "GET", "/policy?version="+tc.version, nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			doc := page.Doc(t)
			assert.Equal(t, tc.tbl.Version(), doc.Find(`[data-testid="policy-version"]`).Text())
			rules := policyRules(doc)
			assert.Len(t, rules, len(tc.tbl.Rules()))
			assert.Equal(t, tc.tbl.Rules()[0].ItemType, rules[0])
			state := strings.Join(strings.Fields(doc.Find(`[data-testid="policy-viewing"]`).Text()), " ")
			assert.Contains(t, state, "replaced at", "it is not the active version")
			assert.Zero(t, doc.Find(`[data-testid="policy-stale"]`).Length(), "a version read by name is not this console's")
			assert.Zero(t, doc.Find(`[data-testid="retention"]`).Length(), "retention terms have versions of their own")
		})
	}
	t.Run("Terms", func(t *testing.T) {
		v := replay.RetentionVersion(older.Retention())
		page := b.Do(t, auditor, "GET", "/policy?version="+v, nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		doc := page.Doc(t)
		assert.Contains(t, doc.Find(`[data-testid="retention"]`).Text(), "kept.ledger.special")
		assert.NotContains(t, doc.Find(`[data-testid="retention"]`).Text(), "kept.ledger.other")
		assert.Zero(t, doc.Find(`[data-testid="policy-rules"]`).Length())
	})
	for _, v := range []string{strings.Repeat("0", 64), "0123456789ab", mine.Version() + "0"} {
		page := b.Do(t, auditor, "GET", "/policy?version="+v, nil, nil)
		assert.Equal(t, http.StatusNotFound, page.Status, v)
	}
	page = b.Do(t, viewer, "GET", "/policy?version="+older.Version(), nil, nil)
	assert.Equal(t, http.StatusForbidden, page.Status, "the policy page's permission")
	page = b.Do(t, viewer, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="replay-policy-rules"]`).Length(), "no link to a page the viewer may not read")
}

// TestPolicyPageSaysAVersionWasNotRecorded: a version replaced before the
// console kept what versions say is shown for what it is: its name and
// dates, and that its rules were not recorded; no rules of another version
// stand in for them.
func TestPolicyPageSaysAVersionWasNotRecorded(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	auditor, _ := b.SignIn(t, "*:auditor")
	old := strings.Repeat("ab", 32)
	_, err := b.DB.OwnerPool.Exec(context.Background(), `INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at)
        VALUES ($1, 'old.toml', now() - interval '90 days', 'host-1', now() - interval '30 days')`, old)
	require.NoError(t, err)
	page := b.Do(t, auditor, "GET", "/policy?version="+old[:12], nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	doc := page.Doc(t)
	assert.Equal(t, old, doc.Find(`[data-testid="policy-version"]`).Text())
	note := strings.Join(strings.Fields(doc.Find(`[data-testid="policy-not-recorded"]`).Text()), " ")
	assert.Contains(t, note, "not recorded: replay policy abababababab was last active before the console kept what versions say (migration 0039)")
	assert.Zero(t, doc.Find(`[data-testid="policy-rule"]`).Length())
}
